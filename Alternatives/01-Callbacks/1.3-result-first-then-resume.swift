import LegacyKit

/// Thrown when the encoder calls back with neither an encoded address nor an error.
struct EmptyEncoderReply: Error, Equatable {}

/// Returns the encoded form of `address`; see the exercise for the four cases.
func encode(
  _ address: String,
  using encoder: AddressEncoder,
  reportWarning: @escaping @Sendable (any Error) -> Void
) async throws -> String {
  try await withCheckedThrowingContinuation { continuation in
    encoder.encode(address) { encoded, error in
      // Decide first, resume once at the end: only one line can resume.
      let result: Result<String, any Error>
      if let encoded {
        if let error { reportWarning(error) }
        result = .success(encoded)
      } else {
        result = .failure(error ?? EmptyEncoderReply())
      }
      continuation.resume(with: result)
    }
  }
}
