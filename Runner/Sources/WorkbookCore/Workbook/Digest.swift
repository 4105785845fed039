import Foundation

/// The starter digest: FNV-1a 64-bit over the file's bytes with CRLF normalised to LF,
/// written `fnv1a64:<16 lowercase hex digits>`.
///
/// It answers one question, "is this file byte-for-byte the shipped starter?", so that an
/// untouched starter is graded "not started" rather than "failed". It is not a security
/// measure. Normalising CRLF keeps the answer stable when Git converts line endings.
public enum Digest {
  public static let prefix = "fnv1a64:"

  public static func of(_ bytes: some Sequence<UInt8>) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    let prime: UInt64 = 0x0000_0100_0000_01b3
    var pendingCarriageReturn = false
    func mix(_ byte: UInt8) {
      hash ^= UInt64(byte)
      hash = hash &* prime
    }
    for byte in bytes {
      if pendingCarriageReturn {
        pendingCarriageReturn = false
        // CR LF becomes LF; a CR followed by anything else stays.
        if byte != 0x0A { mix(0x0D) }
      }
      if byte == 0x0D {
        pendingCarriageReturn = true
      } else {
        mix(byte)
      }
    }
    if pendingCarriageReturn { mix(0x0D) }
    let hex = String(hash, radix: 16)
    return prefix + String(repeating: "0", count: 16 - hex.count) + hex
  }

  public static func of(string: String) -> String { of(Array(string.utf8)) }

  /// The digest of the file at `url`, or `nil` if it cannot be read.
  public static func ofFile(_ url: URL) -> String? {
    guard let data = try? Data(contentsOf: url) else { return nil }
    return of(data)
  }
}
