#include "collectors/common/error.h"

#include <cctype>
#include <cstring>

namespace iodrift {

std::string SystemErrorMessage(const std::string& what, int code) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be `buf`.
  std::string text = strerror_r(code, buf, sizeof(buf));
  // Log style is lowercase: "no such file or directory".
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return what + ": " + text;
}

}  // namespace iodrift
