#pragma once
// A pod's network-selection elements (the k8s.v1.cni.cncf.io/networks annotation Multus
// reads), which of them a CNI call serves, and which IPAMClaim an element references. Multus
// v4 passes an element's `ips` and `cni-args` to the delegate but not its
// `ipam-claim-reference`: allot reads that here.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace allot::cni {

inline constexpr std::string_view kNetworksAnnotation = "k8s.v1.cni.cncf.io/networks";
// What the plugin reads of a pod it does not control: the annotation's size and its number of
// elements (a pod has a few networks; allot-gc's network-status reader allows 128 too).
inline constexpr size_t kMaxNetworksAnnotationBytes = 64 * 1024;
inline constexpr size_t kMaxSelectionElements = 128;

struct SelectionElement {
    size_t index = 0;       // position in the annotation (Multus names it net<index + 1>)
    std::string name;       // the NetworkAttachmentDefinition
    std::string ns;         // its namespace; empty: the pod's
    std::string interface;  // the requested interface name; empty: Multus' default
    std::string claimRef;   // ipam-claim-reference; empty when none
    // cni-args' ipam-claim-reference (Multus passes cni-args to the plugin as args.cni);
    // empty when none. Other cni-args are not read.
    std::string cniArgsClaimRef;
};

// The IPAMClaim the element references, as the plugin takes it (engine/owned_add.h): its
// cni-args' ipam-claim-reference (which reaches the plugin as args.cni's, read first), else its
// own ipam-claim-reference. Empty when it references none. The one answer to "which claim does
// this element reference" for the plugin and for allot-gc's claim pass, which must not free a
// claim's address while a live pod references the claim.
const std::string& claimReference(const SelectionElement& e);

// Every element, in order; none for an empty annotation. InvalidConfig as selectionFor.
core::Result<std::vector<SelectionElement>> selections(std::string_view annotation);

// The element whose interface is `ifName`: its `interface`, or Multus' default net<index+1>
// when it names none. nullopt when no element matches (or the annotation is empty).
// InvalidConfig naming the annotation when it is neither a JSON list of objects nor Multus'
// comma-separated short form, a member (or cni-args' ipam-claim-reference) has the wrong type, or
// it is over kMaxNetworksAnnotationBytes or kMaxSelectionElements (the limit named).
core::Result<std::optional<SelectionElement>> selectionFor(std::string_view annotation,
                                                           std::string_view ifName);

}  // namespace allot::cni
