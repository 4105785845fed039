import Foundation

/// The errors ``AddressEncoder`` reports.
public enum AddressEncodingError: Error, Equatable, Sendable {
  /// The encoding service could not be reached.
  case serviceUnavailable
  /// No street of that name exists.
  case unknownStreet
  /// Sent together with a value: the address was only matched approximately.
  case approximateMatch
}

/// A postal-address encoder in the Objective-C style: its handler receives an optional
/// value and an optional error, `(String?, Error?)`, and nothing stops both, or neither,
/// from being set.
///
/// The encoder turns a free-form address into the normalised line a delivery service prints
/// on a label: "221b Baker Street, London" becomes "221B-BAKER-STREET-LONDON". Which of the
/// four shapes of answer it gives is set by ``reply``; when and how often the handler runs is
/// set by its script. It is thread-safe and serves any number of requests.
public final class AddressEncoder: @unchecked Sendable {
  /// Which arguments the completion handler receives.
  public enum Reply: Sendable, CustomStringConvertible {
    /// `(encoded, nil)`.
    case value
    /// `(nil, error)`.
    case error(AddressEncodingError)
    /// `(encoded, error)`: a value the caller may use, and a warning about it.
    case valueAndError(AddressEncodingError)
    /// `(nil, nil)`.
    case neither

    public var description: String {
      switch self {
      case .value: return "(value, nil)"
      case .error(let error): return "(nil, \(error))"
      case .valueAndError(let error): return "(value, \(error))"
      case .neither: return "(nil, nil)"
      }
    }
  }

  private let script: CallbackScript
  private let lock = NSLock()
  private var currentReply: Reply
  private var requests = 0

  public init(reply: Reply = .value, script: CallbackScript = .default) {
    self.currentReply = reply
    self.script = script
  }

  /// The shape of answer the next request gets; it may be changed between requests.
  public var reply: Reply {
    get {
      lock.lock()
      defer { lock.unlock() }
      return currentReply
    }
    set {
      lock.lock()
      defer { lock.unlock() }
      currentReply = newValue
    }
  }

  /// How many addresses have been handed to ``encode(_:completion:)`` so far.
  public var requestCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return requests
  }

  /// The normalised form of `address`, as ``encode(_:completion:)`` reports it.
  public static func normalised(_ address: String) -> String {
    address.uppercased()
      .split(whereSeparator: { !$0.isLetter && !$0.isNumber })
      .joined(separator: "-")
  }

  /// Encodes `address` and calls `completion` with an encoded line, an error, both or
  /// neither, as ``reply`` says.
  public func encode(_ address: String, completion: @escaping (String?, Error?) -> Void) {
    lock.lock()
    requests += 1
    let reply = currentReply
    lock.unlock()
    let encoded = AddressEncoder.normalised(address)
    script.deliver {
      switch reply {
      case .value: completion(encoded, nil)
      case .error(let error): completion(nil, error)
      case .valueAndError(let error): completion(encoded, error)
      case .neither: completion(nil, nil)
      }
    }
  }
}
