# Cross-compiles stet for aarch64 Linux on a Debian/Ubuntu x86-64 host with the
# distribution's cross compiler (g++-aarch64-linux-gnu) and arm64 multiarch
# -dev packages (libs in /usr/lib/aarch64-linux-gnu); scripts/cross-arm64 installs
# them. A native aarch64 build needs no toolchain file. The numerics flags
# (-ffp-contract=off, no fast-math) come from the top CMakeLists.txt as on x86.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Libraries and config packages: the arm64 multiarch dirs and the host's
# architecture-independent ones (header-only nlohmann_json, CLI11); never the
# host's x86-64 libraries. Programs (pkg-config, ccache) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# The build directory's pkgconfig/ (scripts/cross-arm64 writes it) comes first: libpq,
# whose arm64 -dev package cannot be installed beside the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# scripts/cross-arm64 names that directory in $STET_ARM64_PKGCONFIG (CMAKE_BINARY_DIR is
# not yet the build directory when a first configure reads this file).
if(DEFINED ENV{STET_ARM64_PKGCONFIG} AND EXISTS "$ENV{STET_ARM64_PKGCONFIG}")
  set(ENV{PKG_CONFIG_LIBDIR} "$ENV{STET_ARM64_PKGCONFIG}:$ENV{PKG_CONFIG_LIBDIR}")
elseif(EXISTS "${CMAKE_BINARY_DIR}/pkgconfig")
  set(ENV{PKG_CONFIG_LIBDIR} "${CMAKE_BINARY_DIR}/pkgconfig:$ENV{PKG_CONFIG_LIBDIR}")
endif()
set(ENV{PKG_CONFIG_PATH} "")

# ctest and gtest_discover_tests run the test binaries through qemu. `-L /`: the
# runtime libraries (ld.so, libc, libstdc++) all from the arm64 multiarch packages.
# With -L /usr/aarch64-linux-gnu, ld.so and libstdc++ come from the cross
# toolchain's glibc 2.36-8 but libc from libc6:arm64 2.36-9, and every program that
# starts a thread hangs in pthread_mutex_lock.
find_program(STET_QEMU_AARCH64 qemu-aarch64)
if(STET_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${STET_QEMU_AARCH64} -L /)
endif()
