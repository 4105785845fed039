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
  try await withCheckedThrowingContinuation { continuation in
    encoder.encode(address) { encoded, error in
      // Switching on the pair makes all four combinations explicit, so none can be
      // forgotten, and binds the optionals instead of force-unwrapping them.
      switch (encoded, error) {
      case (let encoded?, nil):
        continuation.resume(returning: encoded)
      case (nil, let error?):
        continuation.resume(throwing: error)
      case (let encoded?, let warning?):
        // The value is usable, so the caller gets it; the error must not vanish, so it
        // is reported before resuming.
        reportWarning(warning)
        continuation.resume(returning: encoded)
      case (nil, nil):
        // Not a legal answer, but legacy code sends it; the caller must not wait forever.
        continuation.resume(throwing: EmptyEncoderReply())
      }
    }
  }
}
