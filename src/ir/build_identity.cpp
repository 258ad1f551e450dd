#include "kiln/ir/build_identity.h"

#include <sys/stat.h>

namespace kiln {

std::string build_identity() {
  struct stat st {};
  if (::stat("/proc/self/exe", &st) != 0) return "unknown";
  return std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace kiln
