#pragma once
// Position recovery for evaluated Jsonnet: libjsonnet's JSON output carries no positions, so each
// key is looked for in the spec's text.
#include "frontend/document.h"

namespace trainc::jsonnet {

/// Fills doc.spans by finding each key of doc.root at its first occurrence in the spec's text
/// after its parent's (best effort: values computed in imported files point at the nearest
/// enclosing key written in the spec).
void recover_positions(Document& doc);

}  // namespace trainc::jsonnet
