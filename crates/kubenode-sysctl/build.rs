//! With the `napi` feature, the binding's build collects this crate's typings as it compiles it:
//! these lines let that build ask cargo to recompile it (napi-build's protocol).
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=NAPI_TYPE_DEF_TMP_FOLDER");
    println!("cargo::rerun-if-env-changed=NAPI_FORCE_BUILD_KUBENODE_SYSCTL");
}
