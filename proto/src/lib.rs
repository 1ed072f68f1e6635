//! # npuzzle-proto
//!
//! What goes on the wire between npuzzle's clients, coordinator and workers: the generated
//! messages and gRPC stubs of `proto/npuzzle/v1/npuzzle.proto` (package `npuzzle.v1`), the encoded
//! descriptor set for server reflection, conversions to and from `npuzzle-solver` types,
//! [`security`]: the bearer tokens and TLS settings with which calls reach the coordinator, and
//! [`answer`]: one answer as JSON, the same for the command line and the HTTP API.

#![forbid(unsafe_code)]

pub mod answer;
pub mod codec;
mod convert;
pub mod security;

pub use convert::*;

/// Generated code for package `npuzzle.v1`.
pub mod v1 {
    tonic::include_proto!("npuzzle.v1");
}

/// The encoded `FileDescriptorSet` of every npuzzle proto, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/npuzzle_descriptor.bin"));
