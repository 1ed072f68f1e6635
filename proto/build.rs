//! Compiles `npuzzle/v1/*.proto` without a system `protoc` (protox is a protobuf compiler in
//! Rust) and writes the encoded descriptor set for gRPC reflection.

use std::path::PathBuf;

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["npuzzle/v1/npuzzle.proto"];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["."])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("npuzzle_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        // A message that does not decode is the sender's fault: INVALID_ARGUMENT, not INTERNAL.
        .codec_path("crate::codec::CheckedCodec")
        // compile_fds does not add the lint allowances that the protoc path adds.
        .type_attribute(".", "#[allow(clippy::all)]")
        .compile_fds(fds)?;
    Ok(())
}
