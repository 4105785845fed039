import Foundation
import WorkbookTesting

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Keeps every session that loads a request through it alive, as Apple's URLSession keeps a
/// session (and, strongly, its delegate) until it is invalidated, so a test can see whether
/// the code that made the session ever invalidated it.
///
/// FoundationNetworking on Linux frees a session, its delegate and its connections once its
/// last task is over, invalidated or not; on Apple platforms a session that is never
/// invalidated stays alive, delegate included, until the app exits. Put
/// ``configuration()``'s configuration in the code under test: each request then loads
/// through ``SessionWitness``, which loads it as the session's own HTTP protocol does and
/// keeps its session. ``sessions(of:)`` hands them out; an invalidated session has let go of
/// its delegate (`session.delegate` is nil).
final class SessionWitness: URLProtocol {
  /// The sessions seen so far, by the URL of the request each one loaded.
  private static let seen = Locked<[String: [URLSession]]>([:])

  /// The protocol that loads the request for real: the session's own HTTP protocol.
  private var loader: URLProtocol?

  /// An ephemeral configuration whose requests load through ``SessionWitness``.
  static func configuration() -> URLSessionConfiguration {
    let configuration = testConfiguration()
    configuration.protocolClasses = [SessionWitness.self] + (configuration.protocolClasses ?? [])
    return configuration
  }

  /// The sessions that loaded `url` through a witness, oldest first.
  static func sessions(of url: URL) -> [URLSession] {
    seen.withLock { $0[url.absoluteString] ?? [] }
  }

  /// Whether this toolchain lets a witness find a task's session (it reads a stored property
  /// of `URLSessionTask` that is not public API): when it does not, there is nothing to see.
  static var canWitness: Bool { witnessWorks.value }
  private static let witnessWorks = Locked(true)

  override class func canInit(with request: URLRequest) -> Bool {
    ["http", "https"].contains(request.url?.scheme ?? "")
  }

  override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

  override func startLoading() {
    guard let task else { return }
    if let session = Self.session(of: task), let url = task.originalRequest?.url {
      Self.seen.withLock { $0[url.absoluteString, default: []].append(session) }
    } else {
      Self.witnessWorks.withLock { $0 = false }
    }
    // The session's own protocols, without this one: the first that takes the request.
    let others = (URLSessionConfiguration.ephemeral.protocolClasses ?? [])
      .compactMap { $0 as? URLProtocol.Type }
    guard let http = others.first(where: { $0.canInit(with: request) }) else { return }
    let loader = http.init(task: task, cachedResponse: nil, client: nil)
    self.loader = loader
    loader.startLoading()
  }

  override func stopLoading() {
    loader?.stopLoading()
  }

  /// The session that made `task`: `URLSessionTask`'s stored `session`, through reflection.
  private static func session(of task: URLSessionTask) -> URLSession? {
    var mirror: Mirror? = Mirror(reflecting: task)
    while let current = mirror {
      for child in current.children where child.label == "session" {
        if let session = child.value as? URLSession { return session }
        let wrapped = Mirror(reflecting: child.value)
        if wrapped.displayStyle == .optional, let some = wrapped.children.first {
          return some.value as? URLSession
        }
      }
      mirror = current.superclassMirror
    }
    return nil
  }
}
