//! Sets up the linker flags a Node addon needs (undefined symbols resolved by the host).

fn main() {
    napi_build::setup();
}
