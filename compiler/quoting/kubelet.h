#pragma once
// Quoting for the kubelet: what a container's env values, command and args must hold to arrive as
// written.
#include <string>
#include <string_view>
#include <vector>

namespace trainc::k8s {

/// `text` as a container's env value, command or args must carry it to arrive as written: the
/// kubelet expands `$(VAR)` there and turns `$$` into `$`, so every `$` is doubled.
std::string literal(std::string_view text);
std::vector<std::string> literal(const std::vector<std::string>& words);

}  // namespace trainc::k8s
