#pragma once
// Text from an untrusted source (a folder a pull request wrote) made safe to print to a terminal.
#include <string>
#include <string_view>

namespace trainc {

/// `text` with every control character but tab and newline (C0, DEL and C1) written as \xNN (C1 as
/// \u00NN), so that text from an untrusted folder printed to a terminal cannot move the cursor, set
/// the title or write the clipboard (OSC 52).
std::string printable(std::string_view text);

}  // namespace trainc
