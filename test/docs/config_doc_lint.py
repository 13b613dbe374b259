#!/usr/bin/env python3
"""Fails when docs/configuration.md and the code disagree on what can be configured.

Each table of the document is marked `<!-- config-doc: NAME -->`; its first column (and, for
allot-gc's flags, its second) lists keys. Each table is compared with what the code reads:

  ipam         kIpamKeys in common/cni/net_config.h (a unit test ties it to the decoder)
  outside      the string literals common/cni/net_config.cpp reads (each part of a dotted key)
  flat-paths   defaultFlatFiles() in common/cni/net_config.cpp
  flat-admin   the keys plugin/node_paths.cpp reads from the admin's flat file
  gc-flags     `allot-gc --help`: every --flag, its [$VARIABLE] and its (default X), which the
               Default column says verbatim (code spans unwrapped)
  gc-env       the variables gc-sidecar/ reads with getenv
  ds-env       the env entries of deploy/daemonset.yaml
  install-env  the ${VARIABLE} settings of deploy/install-cni.sh
  ds-mounts    the volumes of deploy/daemonset.yaml
  ds-accounts  the ServiceAccounts of deploy/rbac.yaml
  plugin-env   the variables plugin/ reads from its environment, and common/'s getenv
  cni-args     the CNI_ARGS keys plugin/cni_env.cpp knows

Besides, every key-like string literal of common/cni/net_config.cpp must appear in the
document inside a code span. Usage: config_doc_lint.py --root SRC --allot-gc BUILT_BINARY
"""

import argparse
import pathlib
import re
import subprocess
import sys

DOC = "docs/configuration.md"


def code_without_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"^#include[^\n]*", "", text, flags=re.M)


def doc_tables(doc):
    """{table name: [rows, each a list of cells]} for every marked table."""
    tables = {}
    name = None
    for line in doc.splitlines():
        m = re.match(r"<!-- config-doc: ([a-z-]+) -->", line.strip())
        if m:
            name = m.group(1)
            tables[name] = []
            continue
        if name is None:
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and not set(cells[0]) <= set("- "):
                tables[name].append(cells)
        elif tables[name]:
            name = None  # the table ended
    for rows in tables.values():
        if rows:
            rows.pop(0)  # the header
    return tables


def column(rows, i):
    out = []
    for r in rows:
        m = re.match(r"`([^`]+)`", r[i]) if i < len(r) else None
        out.append(m.group(1) if m else r[i] if i < len(r) else "")
    return out


class Lint:
    def __init__(self):
        self.failures = []

    def same(self, what, table, in_code, where, in_doc):
        for k in sorted(set(in_code) - set(in_doc)):
            self.failures.append(
                f"{DOC}: {what} `{k}` is in {where} but not in the table "
                f"<!-- config-doc: {table} -->")
        for k in sorted(set(in_doc) - set(in_code)):
            self.failures.append(
                f"{DOC}: {what} `{k}` is in the table <!-- config-doc: {table} --> "
                f"but not in {where}")


def ipam_keys(root):
    header = (root / "common/cni/net_config.h").read_text()
    m = re.search(r"kIpamKeys\[\]\s*=\s*\{(.*?)\};", code_without_comments(header), re.S)
    if not m:
        sys.exit("config-doc: kIpamKeys not found in common/cni/net_config.h")
    return re.findall(r'"([^"]+)"', m.group(1))


def decoder_literals(root):
    text = code_without_comments((root / "common/cni/net_config.cpp").read_text())
    return sorted(set(re.findall(r'"([A-Za-z][A-Za-z0-9_/-]*(?:\.[A-Za-z][A-Za-z0-9_/-]*)*)"',
                                 text)))


def flat_paths(root):
    text = (root / "common/cni/net_config.cpp").read_text()
    m = re.search(r"defaultFlatFiles\(\)\s*\{(.*?)\n\}", text, re.S)
    return re.findall(r'"(/[^"]+)"', m.group(1)) if m else []


def flat_admin_keys(root):
    text = code_without_comments((root / "plugin/node_paths.cpp").read_text())
    return sorted(set(re.findall(r'stringKey\(\*v, "([^"]+)"\)', text) +
                      re.findall(r'v->find\("([^"]+)"\)', text)))


def gc_flags(binary):
    try:
        out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        sys.exit(f"config-doc: cannot run {binary}: {e}")
    found = re.findall(r"^\s+--([a-z0-9-]+)=\S+\s+\[\$([A-Z0-9_]+)\] \(default (.*)\)$",
                       out.stdout, re.M)
    if not found:
        sys.exit(f"config-doc: no flags in `{binary} --help`:\n{out.stdout}{out.stderr}")
    return {"--" + f: e for f, e, _ in found}, {"--" + f: d for f, _, d in found}


def check_defaults(lint, help_defaults, rows):
    """The table's Default column says what `allot-gc --help` says (code spans unwrapped)."""
    for r in rows:
        flag = column([r], 0)[0]
        if flag in help_defaults and len(r) > 3 and r[3].replace("`", "") != help_defaults[flag]:
            lint.failures.append(f"{DOC}: {flag}'s default is \"{help_defaults[flag]}\" "
                                 f"(allot-gc --help), the document says \"{r[3]}\"")


def getenv_names(paths):
    names = set()
    for p in paths:
        names |= set(re.findall(r'getenv\("([A-Z0-9_]+)"\)', p.read_text()))
    return sorted(names)


def plugin_env_names(root):
    names = set(getenv_names((root / "common").rglob("*.cpp")))
    for p in (root / "plugin").glob("*.cpp"):
        t = p.read_text()
        names |= set(re.findall(r'(?:get\(env, |env\.find\(|envOr\()"([A-Z0-9_]+)"\)', t))
    return sorted(names)


def daemonset(root):
    text = (root / "deploy/daemonset.yaml").read_text()
    env = set()
    for block in re.findall(r"^(\s*)env:\n((?:\1[- #][^\n]*\n)+)", text, re.M):
        env |= set(re.findall(r"- name: ([A-Z0-9_]+)", block[1]))
    vols = re.search(r"^      volumes:\n(.*)", text, re.M | re.S)
    mounts = re.findall(r"^      - name: ([a-z0-9-]+)", vols.group(1), re.M) if vols else []
    return sorted(env), mounts


def install_env(root):
    text = (root / "deploy/install-cni.sh").read_text()
    return sorted(set(re.findall(r"\$\{([A-Z0-9_]+)[:}]", text)))


def service_accounts(root):
    text = (root / "deploy/rbac.yaml").read_text()
    out = []
    for doc in text.split("\n---"):
        if re.search(r"^kind: ServiceAccount$", doc, re.M):
            name = re.search(r"^  name: (\S+)", doc, re.M).group(1)
            ns = re.search(r"^  namespace: (\S+)", doc, re.M).group(1)
            out.append(f"{ns}/{name}")
    return out


def cni_args_keys(root):
    text = (root / "plugin/cni_env.cpp").read_text()
    return sorted(set(re.findall(r'key == "([A-Za-z0-9_]+)"', text)))


def in_code_span(doc, literal):
    spans = re.findall(r"`([^`\n]+)`", doc)
    pat = re.compile(r"(?<![A-Za-z0-9_-])" + re.escape(literal) + r"(?![A-Za-z0-9_-])")
    return any(pat.search(s) for s in spans)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--allot-gc", required=True)
    a = ap.parse_args()
    root = pathlib.Path(a.root)
    doc = (root / DOC).read_text()
    t = doc_tables(doc)
    want = ["ipam", "outside", "flat-paths", "flat-admin", "gc-flags", "gc-env", "ds-env",
            "install-env", "ds-mounts", "ds-accounts", "plugin-env", "cni-args"]
    lint = Lint()
    for name in want:
        if not t.get(name):
            lint.failures.append(f"{DOC}: no table marked <!-- config-doc: {name} -->")
    if lint.failures:
        print("\n".join(lint.failures))
        return 1

    lint.same("ipam key", "ipam", ipam_keys(root), "kIpamKeys (common/cni/net_config.h)",
              column(t["ipam"], 0))
    literals = decoder_literals(root)
    for lit in literals:
        if not all(in_code_span(doc, part) for part in lit.split(".")):
            lint.failures.append(f"{DOC}: `{lit}`, read in common/cni/net_config.cpp, is not "
                                 "documented")
    parts = {p for lit in literals for p in lit.split(".")}
    for key in column(t["outside"], 0):
        if any(p not in parts for p in key.split(".")):
            lint.failures.append(f"{DOC}: `{key}` (table <!-- config-doc: outside -->) is "
                                 "not read in common/cni/net_config.cpp")
    lint.same("flat file", "flat-paths", flat_paths(root) + ["configuration_path"],
              "defaultFlatFiles() (common/cni/net_config.cpp)",
              column(t["flat-paths"], 0))
    lint.same("flat-file key", "flat-admin", flat_admin_keys(root), "plugin/node_paths.cpp",
              column(t["flat-admin"], 0))
    flags, defaults = gc_flags(a.allot_gc)
    doc_flags = dict(zip(column(t["gc-flags"], 0), column(t["gc-flags"], 1)))
    lint.same("allot-gc flag", "gc-flags", flags, "`allot-gc --help`", doc_flags)
    check_defaults(lint, defaults, t["gc-flags"])
    for f in sorted(set(flags) & set(doc_flags)):
        if flags[f] != doc_flags[f]:
            lint.failures.append(f"{DOC}: {f} reads ${flags[f]} (allot-gc --help), the "
                                 f"document says ${doc_flags[f]}")
    lint.same("allot-gc variable", "gc-env",
              [n for n in getenv_names((root / "gc-sidecar").glob("**/*.cpp"))
               if n not in flags.values()], "gc-sidecar/ (getenv)", column(t["gc-env"], 0))
    ds_env, mounts = daemonset(root)
    lint.same("DaemonSet variable", "ds-env", ds_env, "deploy/daemonset.yaml",
              column(t["ds-env"], 0))
    lint.same("install-cni.sh variable", "install-env", install_env(root),
              "deploy/install-cni.sh", column(t["install-env"], 0))
    lint.same("DaemonSet volume", "ds-mounts", mounts, "deploy/daemonset.yaml",
              column(t["ds-mounts"], 0))
    lint.same("ServiceAccount", "ds-accounts", service_accounts(root), "deploy/rbac.yaml",
              column(t["ds-accounts"], 0))
    lint.same("plugin variable", "plugin-env", plugin_env_names(root),
              "plugin/ and common/ (the environment the plugin reads)",
              column(t["plugin-env"], 0))
    lint.same("CNI_ARGS key", "cni-args", cni_args_keys(root), "plugin/cni_env.cpp",
              column(t["cni-args"], 0))

    if lint.failures:
        print("\n".join(lint.failures))
        print(f"config-doc: {len(lint.failures)} problem(s); update {DOC} or the code")
        return 1
    print(f"config-doc: {DOC} matches the code ({len(ipam_keys(root))} ipam keys, "
          f"{len(flags)} allot-gc flags)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
