import LegacyKit

/// Thrown when the encoder calls back with neither an encoded address nor an error.
struct EmptyEncoderReply: Error, Equatable {}

// The callback way:
//
//     encoder.encode(address) { encoded, error in
//       if let encoded { printLabel(encoded) }
//       if let error { log(error) }
//     }

/// Returns the encoded form of `address`.
///
/// The encoder's handler may receive a value, an error, both, or neither:
/// - a value alone is returned;
/// - an error alone is thrown;
/// - a value with an error returns the value and passes the error to `reportWarning`;
/// - neither throws ``EmptyEncoderReply``.
func encode(
  _ address: String,
  using encoder: AddressEncoder,
  reportWarning: @escaping @Sendable (any Error) -> Void
) async throws -> String {
  // TODO: Ask `encoder.encode(_:completion:)`, and answer the caller exactly once, as the
  // list above says for each of the four combinations.
  throw Unfinished()
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
