#include "util/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>  // defines __GLIBC__ where the C library is glibc
#include <fstream>
#include <string>
#include <utility>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sf {

bool keep_freed_memory() {
#if defined(__GLIBC__)
  // Blocks up to 256 MB come from the heap; the heap's top is given back to the kernel only past 1 GB free.
  // mallopt returns 0 for a value it refuses: a glibc that takes no threshold over 32 MB gets that one.
  const bool threshold = mallopt(M_MMAP_THRESHOLD, 256 << 20) == 1 || mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool trim = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
  return threshold && trim;
#else
  return false;
#endif
}

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<double>(pages) * static_cast<double>(page_size) : 8e9;
}

namespace {

// The first number in a small system file, or -1 (absent, "max", unreadable).
double number_in(const char* path) {
  std::ifstream in(path);
  double v = -1;
  if (!(in >> v)) return -1;
  return v;
}

// A field of /proc/meminfo in bytes ("MemAvailable"), or -1.
double meminfo_bytes(const std::string& field) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  double kb = 0;
  std::string unit;
  while (in >> name >> kb) {
    std::getline(in, unit);
    if (name == field + ":") return kb * 1024.0;
  }
  return -1;
}

}  // namespace

double available_memory_bytes() {
  double best = meminfo_bytes("MemAvailable");
  if (best < 0) best = physical_memory_bytes();
  const double page = static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  // /proc/self/statm: size resident shared text lib data dt (pages); data counts the heap and anonymous maps.
  double size_pages = -1, data_pages = -1;
  {
    std::ifstream in("/proc/self/statm");
    double resident = 0, shared = 0, text = 0, lib = 0;
    if (!(in >> size_pages >> resident >> shared >> text >> lib >> data_pages)) size_pages = data_pages = -1;
  }
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && size_pages >= 0)
    best = std::min(best, static_cast<double>(limit.rlim_cur) - size_pages * page);
  if (::getrlimit(RLIMIT_DATA, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && data_pages >= 0)
    best = std::min(best, static_cast<double>(limit.rlim_cur) - data_pages * page);
  // cgroup v2, then v1 (a container sees its own group at the mount's root); a limit of 2^62 or more is none.
  for (const auto& [max_file, used_file] : {std::pair{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
                                            std::pair{"/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                                      "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const double cap = number_in(max_file), used = number_in(used_file);
    if (cap > 0 && cap < 4.6e18 && used >= 0) best = std::min(best, cap - used);
  }
  return std::max(0.0, best);
}

}  // namespace sf
