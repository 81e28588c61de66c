//! Builds the C++ side of the cxx bridge (src/cxx_bridge.rs) into the library, so one archive
//! serves C and C++; its headers land in the target directory's `cxxbridge/` for CMake.

fn main() {
    cxx_build::bridge("src/cxx_bridge.rs")
        .include("include")
        .std("c++17")
        .flag_if_supported("-Wall")
        .flag_if_supported("-Wextra")
        .compile("baton_cxx_bridge");
    println!("cargo:rerun-if-changed=src/cxx_bridge.rs");
    println!("cargo:rerun-if-changed=include/baton/lost_callback.hpp");
}
