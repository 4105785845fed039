import Foundation

/// Why ``AccountService`` could not answer a request.
public enum AccountServiceError: Error, Equatable, Sendable {
  /// No account has the identifier that was asked for.
  case unknownAccount
  /// The avatar server has the image but failed to send it.
  case avatarUnavailable
}

/// An account as the service describes it.
public struct AccountRecord: Equatable, Sendable {
  public let id: Int
  public let displayName: String
  /// Where the account's avatar lives on the avatar server.
  public let avatarKey: String

  public init(id: Int, displayName: String, avatarKey: String) {
    self.id = id
    self.displayName = displayName
    self.avatarKey = avatarKey
  }
}

/// A user-account backend in the pre-concurrency style, with two requests that answer
/// through completion handlers: the account itself, and its avatar image.
///
/// The avatar request follows an old convention of the avatar server: the handler receives
/// `(image, nil)` when there is an image, `(nil, error)` when sending it failed, and
/// `(nil, nil)` when the user never uploaded one ("204 No Content"). Each request is
/// answered exactly once, when and where `script` says. Thread-safe and reusable.
public final class AccountService: @unchecked Sendable {
  private let accounts: [Int: AccountRecord]
  private let avatars: [String: Data]
  private let brokenAvatars: Set<String>
  private let script: CallbackScript
  private let lock = NSLock()
  private var accountCalls = 0
  private var avatarCalls = 0

  /// - Parameters:
  ///   - accounts: The accounts the service knows.
  ///   - avatars: The image stored under each avatar key. A key with no image here gets
  ///     `(nil, nil)`: that user has no avatar.
  ///   - brokenAvatars: Keys whose image fails to send: `(nil, .avatarUnavailable)`.
  ///   - script: When and on which thread every handler is called. Its `times` must be 1.
  public init(
    accounts: [AccountRecord], avatars: [String: Data], brokenAvatars: Set<String> = [],
    script: CallbackScript = .default
  ) {
    precondition(script.times == 1, "an AccountService answers every request exactly once")
    self.accounts = Dictionary(uniqueKeysWithValues: accounts.map { ($0.id, $0) })
    self.avatars = avatars
    self.brokenAvatars = brokenAvatars
    self.script = script
  }

  /// How many times ``fetchAccount(id:completion:)`` has been called.
  public var accountRequests: Int {
    lock.lock()
    defer { lock.unlock() }
    return accountCalls
  }

  /// How many times ``fetchAvatar(key:completion:)`` has been called.
  public var avatarRequests: Int {
    lock.lock()
    defer { lock.unlock() }
    return avatarCalls
  }

  /// Looks up the account with identifier `id`.
  public func fetchAccount(
    id: Int, completion: @escaping (Result<AccountRecord, AccountServiceError>) -> Void
  ) {
    lock.lock()
    accountCalls += 1
    lock.unlock()
    let result: Result<AccountRecord, AccountServiceError> =
      accounts[id].map { .success($0) } ?? .failure(.unknownAccount)
    script.deliver { completion(result) }
  }

  /// Fetches the avatar stored under `key`: `(image, nil)`, `(nil, error)`, or `(nil, nil)`
  /// when the user has no avatar.
  public func fetchAvatar(key: String, completion: @escaping (Data?, Error?) -> Void) {
    lock.lock()
    avatarCalls += 1
    lock.unlock()
    if brokenAvatars.contains(key) {
      script.deliver { completion(nil, AccountServiceError.avatarUnavailable) }
    } else {
      let image = avatars[key]
      script.deliver { completion(image, nil) }
    }
  }
}
