#!/usr/bin/env bash
# The release: scripts/release makes one from this checkout, and a cluster is installed from
# its files alone, in a directory outside the checkout, with the README's commands:
#   - SHA256SUMS checks every file; CHANGES.md is the CHANGELOG's section;
#   - the image archive is one OCI layout with an index naming each platform's manifest, which
#     a registry client (skopeo) copies whole, and `docker load` gives allot:VERSION, whose
#     plugin answers CNI VERSION;
#   - on a private real API server: the README's CRD loop and `kubectl apply -k deploy/`
#     install the DaemonSet on allot:VERSION; the packaged chart installs through its
#     repository index (helm repo add over HTTP) and from the .tgz itself.
#
#   test/release/release_test.sh
#
# Short form (CI): the amd64 image only. ALLOT_RELEASE_ARCHES="amd64 arm64" makes the full
# release (the arm64 image is cross-compiled and checked under qemu-user: 15-25 minutes more).
# Needs root and Docker (the image build). Prints `ok - NAME` / `not ok - NAME`, then
# `release: N passed, N failed`.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$ROOT/test/lib.sh"
SUITE_NAME=release
cd "$ROOT" || exit 1

[[ $(id -u) -eq 0 ]] || { echo "SKIP: the image build needs root"; exit 77; }
# The README's commands name the release: keep them in step with meson.build.
VERSION=0.1.0
grep -q "^  version : '$VERSION'," meson.build ||
  suite_die "meson.build's version is $VERSION (update the README's install commands and this test with it)"
export ALLOT_RELEASE_ARCHES=${ALLOT_RELEASE_ARCHES:-amd64}
command -v skopeo >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends skopeo >/dev/null 2>&1 ||
  suite_die "apt-get install skopeo"
helm_bin=$(e2e/build-helm 2>/dev/null) || suite_die "e2e/build-helm"
PATH=$(dirname "$helm_bin"):$PATH

WORK=$(mktemp -d "${TMPDIR:-/tmp}/allot-release.XXXXXX")
on_exit "rm -rf '$WORK'"
t_release() { scripts/release "$VERSION" "$WORK/out" >"$WORK/release.log" 2>&1 || { tail -n 30 "$WORK/release.log"; return 1; }; }
check "scripts/release $VERSION ($ALLOT_RELEASE_ARCHES)" t_release
[[ -f "$WORK/out/SHA256SUMS" ]] || { suite_summary; exit 1; }

# From here on, only the release's files: a copy outside the checkout, as a user downloads it.
SITE=$WORK/site
cp -r "$WORK/out" "$SITE"
cd "$SITE" || exit 1
ARCHIVE=allot-$VERSION-images.oci.tar

t_sums() {
  sha256sum -c SHA256SUMS || return 1
  local f
  for f in "$ARCHIVE" "allot-$VERSION.tgz" index.yaml CHANGES.md deploy/kustomization.yaml; do
    grep -q "  $f\$" SHA256SUMS || { echo "SHA256SUMS misses $f"; return 1; }
  done
  grep -q "^# allot $VERSION" CHANGES.md && [[ $(wc -l <CHANGES.md) -gt 3 ]]
}
check "SHA256SUMS checks every file; CHANGES.md is the CHANGELOG's section" t_sums

t_index() {
  local want have
  want=$(tr ' ' '\n' <<<"$ALLOT_RELEASE_ARCHES" | grep . | sort | paste -sd,)
  have=$(skopeo inspect --raw "oci-archive:$ARCHIVE:$VERSION" |
    jq -r '[.manifests[].platform | select(.os == "linux") | .architecture] | sort | join(",")') || return 1
  [[ "$have" == "$want" ]] || { echo "the image index's platforms: $have, want $want"; return 1; }
  skopeo copy --quiet --all "oci-archive:$ARCHIVE:$VERSION" "oci:$WORK/copied:$VERSION" || return 1
  skopeo inspect --raw "oci:$WORK/copied:$VERSION" | jq -e --arg n "${have//[^,]/}" \
    '.manifests | length == ($n | length) + 1' >/dev/null
}
check "the image archive is an OCI index of each platform, copied whole by skopeo" t_index

t_load() {
  docker rmi "allot:$VERSION" >/dev/null 2>&1
  docker load -i allot-0.1.0-images.oci.tar || return 1
  docker run --rm --entrypoint /usr/local/bin/allot -e CNI_COMMAND=VERSION "allot:$VERSION" </dev/null |
    jq -e '.supportedVersions | index("1.1.0")' >/dev/null
}
check "docker load gives allot:$VERSION, whose plugin answers CNI VERSION" t_load

ALLOT_CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/allot-cluster-release.XXXXXX")
export ALLOT_CLUSTER_DIR
on_exit "'$ROOT/e2e/cluster' down >/dev/null 2>&1; rm -rf '$ALLOT_CLUSTER_DIR'"
"$ROOT/e2e/cluster" up >"$WORK/up.log" 2>&1 || suite_die "a private cluster starts" "$WORK/up.log"
eval "$("$ROOT/e2e/cluster" env)"
kubectl delete -f deploy/rbac.yaml --wait >/dev/null || suite_die "the cluster's bootstrap RBAC is removed"
ds_image() { kubectl -n kube-system get ds allot -o jsonpath='{.spec.template.spec.containers[0].image}'; }

t_kustomize() {
  for f in deploy/crds/*.yaml; do kubectl get -f "$f" >/dev/null 2>&1 || kubectl create -f "$f"; done
  kubectl apply -k deploy/ || return 1
  [[ $(ds_image) == "allot:$VERSION" ]] || { echo "DaemonSet image $(ds_image)"; return 1; }
  kubectl delete -k deploy/ --wait >/dev/null
}
check "the release's deploy/ installs allot:$VERSION with the README's commands" t_kustomize

t_helm_repo() {
  local port
  port=$(free_port)
  python3 -m http.server "$port" --bind 127.0.0.1 >"$WORK/http.log" 2>&1 &
  on_exit "kill $! 2>/dev/null"
  wait_for 10 curl -fsS "http://127.0.0.1:$port/index.yaml" -o /dev/null || return 1
  helm repo add allot-release "http://127.0.0.1:$port" --force-update >/dev/null || return 1
  helm install allot allot-release/allot --version "$VERSION" --namespace kube-system || return 1
  [[ $(ds_image) == "allot:$VERSION" ]] || { echo "DaemonSet image $(ds_image)"; return 1; }
  helm uninstall allot --namespace kube-system --wait >/dev/null
}
check "the chart installs allot:$VERSION from the release's repository index" t_helm_repo

t_helm_tgz() {
  helm install allot allot-0.1.0.tgz --namespace kube-system || return 1
  [[ $(ds_image) == "allot:$VERSION" ]] || return 1
  helm uninstall allot --namespace kube-system --wait >/dev/null
}
check "the chart installs from the release's .tgz" t_helm_tgz

suite_summary
((failed == 0))
