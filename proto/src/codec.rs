//! The codec of every npuzzle service: prost's, except that a message that does not decode is
//! the sender's fault and says so: `INVALID_ARGUMENT` (prost's codec answers `INTERNAL`, which
//! reads as a fault of the coordinator).

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// [`ProstCodec`] with [`CheckedDecoder`].
#[derive(Debug, Clone)]
pub struct CheckedCodec<T, U>(ProstCodec<T, U>);

impl<T, U> Default for CheckedCodec<T, U> {
    fn default() -> Self {
        CheckedCodec(ProstCodec::default())
    }
}

impl<T, U> Codec for CheckedCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = CheckedDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        self.0.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        CheckedDecoder(self.0.decoder())
    }
}

/// Decodes with prost; a message that does not decode is `INVALID_ARGUMENT`.
#[derive(Debug, Clone)]
pub struct CheckedDecoder<U>(ProstDecoder<U>);

impl<U: Message + Default> Decoder for CheckedDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.0.decode(buf).map_err(|e| {
            Status::invalid_argument(format!(
                "the message does not decode as a protobuf {}: {}",
                std::any::type_name::<U>()
                    .rsplit("::")
                    .next()
                    .unwrap_or("message"),
                e.message()
            ))
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}
