//! Server reflection, v1 and v1alpha, asked by tonic-reflection's own generated clients: the
//! services are listed, and the file that defines `npuzzle.v1.Solver` comes back whole, so that
//! grpcurl needs no proto files.

use crate::common::{TestCluster, eager_config};
use prost::Message;
use prost_types::FileDescriptorProto;

/// The same questions in each protocol version (their generated types differ only by module).
macro_rules! reflection_client {
    ($version:ident) => {
        mod $version {
            use tokio_stream::StreamExt;
            use tonic_reflection::pb::$version::ServerReflectionRequest;
            use tonic_reflection::pb::$version::server_reflection_client::ServerReflectionClient;
            use tonic_reflection::pb::$version::server_reflection_request::MessageRequest;
            use tonic_reflection::pb::$version::server_reflection_response::MessageResponse;

            async fn ask(url: &str, request: MessageRequest) -> MessageResponse {
                let channel = tonic::transport::Channel::from_shared(url.to_string())
                    .unwrap()
                    .connect()
                    .await
                    .unwrap();
                let mut client = ServerReflectionClient::new(channel);
                let request = ServerReflectionRequest {
                    host: String::new(),
                    message_request: Some(request),
                };
                let mut answers = client
                    .server_reflection_info(tokio_stream::once(request))
                    .await
                    .unwrap()
                    .into_inner();
                let answer = answers.next().await.unwrap().unwrap();
                answer.message_response.unwrap()
            }

            pub async fn services(url: &str) -> Vec<String> {
                match ask(url, MessageRequest::ListServices(String::new())).await {
                    MessageResponse::ListServicesResponse(r) => {
                        r.service.into_iter().map(|s| s.name).collect()
                    }
                    other => panic!("{other:?}"),
                }
            }

            /// The encoded file descriptors that define `symbol` (and what they import).
            pub async fn files_containing(url: &str, symbol: &str) -> Vec<Vec<u8>> {
                match ask(url, MessageRequest::FileContainingSymbol(symbol.into())).await {
                    MessageResponse::FileDescriptorResponse(r) => r.file_descriptor_proto,
                    other => panic!("{other:?}"),
                }
            }
        }
    };
}

reflection_client!(v1);
reflection_client!(v1alpha);

const EXPECTED: [&str; 3] = [
    "npuzzle.v1.Solver",
    "npuzzle.v1.Cluster",
    "grpc.health.v1.Health",
];

fn check_solver_file(encoded: Vec<Vec<u8>>) {
    let files: Vec<FileDescriptorProto> = encoded
        .iter()
        .map(|bytes| FileDescriptorProto::decode(bytes.as_slice()).unwrap())
        .collect();
    let file = files
        .iter()
        .find(|f| f.package() == "npuzzle.v1")
        .expect("the npuzzle.v1 file");
    assert_eq!(file.name(), "npuzzle/v1/npuzzle.proto");
    let solver = file
        .service
        .iter()
        .find(|s| s.name() == "Solver")
        .expect("Solver is defined there");
    let methods: Vec<&str> = solver.method.iter().map(|m| m.name()).collect();
    assert_eq!(
        methods,
        [
            "Solve",
            "SolveStream",
            "Stats",
            "SubmitJob",
            "GetJob",
            "WatchJob",
            "CancelJob",
            "ListJobs"
        ]
    );
    assert!(
        file.message_type.iter().any(|m| m.name() == "SolveRequest"),
        "the messages come with it"
    );
}

#[tokio::test]
async fn v1_lists_the_services_and_describes_the_solver() {
    let cluster = TestCluster::start(eager_config()).await;
    cluster.client().await;
    let services = v1::services(&cluster.url).await;
    for name in EXPECTED
        .into_iter()
        .chain(["grpc.reflection.v1.ServerReflection"])
    {
        assert!(services.iter().any(|s| s == name), "{name} in {services:?}");
    }
    check_solver_file(v1::files_containing(&cluster.url, "npuzzle.v1.Solver").await);
}

#[tokio::test]
async fn v1alpha_lists_the_services_and_describes_the_solver() {
    let cluster = TestCluster::start(eager_config()).await;
    cluster.client().await;
    let services = v1alpha::services(&cluster.url).await;
    for name in EXPECTED
        .into_iter()
        .chain(["grpc.reflection.v1alpha.ServerReflection"])
    {
        assert!(services.iter().any(|s| s == name), "{name} in {services:?}");
    }
    check_solver_file(v1alpha::files_containing(&cluster.url, "npuzzle.v1.Solver").await);
}
