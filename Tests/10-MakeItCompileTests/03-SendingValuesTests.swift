import Dispatch
import Foundation
import Synchronization
import Testing
import WorkbookTesting

@testable import MakeItCompile

/// The contract of the album uploads: each path, what callers see, and the test that checks
/// it (— where a column does not apply, and why). The compile check (Swift 6 mode, no
/// warning, no escape hatch) is the runner's; these tests check that the fix kept the
/// feature working, and that a form handed to the outbox is the outbox's alone.
///
/// | path | what the server gets | the caller's log line | the outbox's kept form | thread, concurrency |
/// | --- | --- | --- | --- | --- |
/// | albums, one after the other (one of them empty) | each album's form complete (endpoint, device, album, its photos, the upload ID): `albumsArriveComplete` | one per album, in order, with the upload ID its form got: `linesNameTheirUploads` | — every form is taken | posted off the main actor: every test (`postedOffTheMainActor`) |
/// | an album the server refuses, then retries | the form as it was sent, attempt 2, then 3: `refusedAlbumsAreRetriedAsSent` | the upload ID it was given when refused: `refusedAlbumsAreRetriedAsSent` | unchanged by the caller's next albums: `refusedAlbumsAreRetriedAsSent` | — |
/// | a form from the share extension | complete, with its own fields: `sharedFormArrivesComplete` | its upload ID: `sharedFormArrivesComplete` | kept as sent, retried complete: `refusedSharedFormIsRetriedAsSent` | — |
/// | several refused, then retried | — | — | retried in the order refused: `retriesInTheOrderRefused` | — |
/// | a form without an album | — | `Untitled`: `formWithoutAnAlbum` | — | — |
/// | called from the main actor | — as above | — as above | — | posted off the main actor: `postsOffTheMainActorWhenCalledFromIt` |
/// | many uploads at once, retries in between | every album complete, upload IDs all different: `manyUploadsAtOnce` | each line its own album's ID: `manyUploadsAtOnce` | every refused album retried as sent: `manyUploadsAtOnce` | no data race (Thread Sanitizer): `manyUploadsAtOnce` |
/// | many sends at once | — | — | — | one post at a time: `manyUploadsAtOnce` |
/// | albums uploaded at the same time instead of one after the other | — the outbox serializes the sends, so only the upload IDs' order could show it, and that order holds by chance as often as not: not testable every run | | | |
/// | the upload ID read from the outbox in a second call after `send` | — not caught: another caller's send must reach the outbox in the instant between the two calls. A test that queued a second upload's send while the first one's post was still running saw the first caller's second call served before it (the task that has just left the outbox gets back in first), so nothing the test owns lies in that gap | | | |
/// | the caller uses the form after the hand-off | — the compiler refuses it: `sending` and region checks are the runner's compile check | | | |
@Suite("10.3 Sending values")
struct SendingValuesTests {
  @Test("Each album arrives as a form of its own: endpoint, device, title, photos, upload ID")
  func albumsArriveComplete() async throws {
    let transport = AlbumUploadRecorder()
    let outbox = await makeAlbumOutbox(transport)
    let albums = [beach, snow, emptyAlbum]

    _ = try await uploadAlbumsWithDeadline(albums, device: "Ana's phone", through: outbox)

    let posts = transport.posts
    #expect(
      posts.count == albums.count,
      Comment(
        rawValue: "\(albums.count) albums were uploaded and the server got \(posts.count) "
          + "forms: uploadAlbums must post one form per album, once"))
    for (index, album) in albums.enumerated() {
      let expected = albumForm(album, device: "Ana's phone", uploadID: index + 1)
      let problem = formProblem(
        posts.indices.contains(index) ? posts[index] : nil, expected: expected,
        what: "the form of album \"\(album.title)\" (upload \(index + 1))")
      #expect(
        problem == nil,
        Comment(
          rawValue: (problem ?? "") + ". Each album's form must carry the device's name, the "
            + "album's title and the album's photos, and nothing left over from another "
            + "album"))
    }
    postedOffTheMainActor(transport)
  }

  @Test("The log has one line per album, in order, naming the upload ID its form got")
  func linesNameTheirUploads() async throws {
    let transport = AlbumUploadRecorder()
    let outbox = await makeAlbumOutbox(transport)

    let lines = try await uploadAlbumsWithDeadline(
      [beach, snow, emptyAlbum], device: "Ana's phone", through: outbox)

    let expected = [
      "Beach: 3 photos, 14 bytes, upload 1",
      "Snow: 2 photos, 9 bytes, upload 2",
      "Empty: 0 photos, 0 bytes, upload 3",
    ]
    #expect(
      lines == expected,
      Comment(
        rawValue: "uploadAlbums returned \(lines), not \(expected). "
          + lineHint(lines, expected)))
    postedOffTheMainActor(transport)
  }

  @Test("Refused albums are retried in the order they were refused")
  func retriesInTheOrderRefused() async throws {
    // The server refuses every first post, and takes every retry.
    let transport = AlbumUploadRecorder { form in form.fields["attempt"] != nil }
    let outbox = await makeAlbumOutbox(transport)
    let albums = (1...8).map { UploadAlbum(title: "Album \($0)", photos: []) }

    _ = try await uploadAlbumsWithDeadline(albums, device: "Ana's phone", through: outbox)
    let retried = try await withDeadline(.seconds(2), "retryRefused()") {
      await outbox.retryRefused()
    }

    let order = transport.posts.dropFirst(albums.count).map { $0.fields["album"] ?? "?" }
    // Only the order is this test's: lost or changed forms are named by the other tests.
    guard retried == albums.count, order.sorted() == albums.map(\.title).sorted() else { return }
    #expect(
      order == albums.map(\.title),
      "the server refused 8 albums, Album 1 to Album 8, and retryRefused() (which returned \(retried)) posted them again in the order \(order): the outbox must keep refused forms in the order they were refused, and retry them in that order"
    )
  }

  @Test("A refused album is kept and retried exactly as it was sent, whatever comes next")
  func refusedAlbumsAreRetriedAsSent() async throws {
    // The server refuses the first posts of Beach and Snow, and Beach's first retry too.
    let transport = AlbumUploadRecorder { form in
      switch (form.fields["album"], form.fields["attempt"]) {
      case ("Beach", nil), ("Beach", "2"), ("Snow", nil): false
      default: true
      }
    }
    let outbox = await makeAlbumOutbox(transport)

    let lines = try await uploadAlbumsWithDeadline(
      [beach, snow, mountains], device: "Ana's phone", through: outbox)
    let firstRetry = try await withDeadline(.seconds(2), "retryRefused()") {
      await outbox.retryRefused()
    }
    let secondRetry = try await withDeadline(.seconds(2), "retryRefused()") {
      await outbox.retryRefused()
    }

    #expect(
      lines.map { $0.components(separatedBy: ", upload ").last ?? "" } == ["1", "2", "3"],
      Comment(
        rawValue: "uploadAlbums returned \(lines): a refused album's line names the upload "
          + "ID its form was given, like any other. " + lineHint(lines, [])))
    let retries = Array(transport.posts.dropFirst(3))
    let expected = [
      albumForm(beach, device: "Ana's phone", uploadID: 1, attempt: 2),
      albumForm(snow, device: "Ana's phone", uploadID: 2, attempt: 2),
      albumForm(beach, device: "Ana's phone", uploadID: 1, attempt: 3),
    ]
    let names = ["Beach's first retry", "Snow's first retry", "Beach's second retry"]
    for index in expected.indices {
      let problem = formProblem(
        retries.indices.contains(index) ? retries[index] : nil, expected: expected[index],
        what: names[index])
      guard let problem else { continue }
      Issue.record(
        Comment(
          rawValue: problem + ". "
            + (sharedHint(retries.indices.contains(index) ? retries[index] : nil, expected[index])
              ?? "The outbox keeps a refused form and must post it again as it was sent, "
              + "with only its attempt field counted up (2, then 3)")))
      break
    }
    #expect(
      firstRetry == 1 && secondRetry == 1,
      Comment(
        rawValue: "retryRefused() returned \(firstRetry), then \(secondRetry), not 1 and 1: "
          + "the server took Snow on the first retry and Beach on the second"))
    postedOffTheMainActor(transport)
  }

  @Test("A form from the share extension arrives complete, and its line names its upload")
  func sharedFormArrivesComplete() async throws {
    let transport = AlbumUploadRecorder()
    let outbox = await makeAlbumOutbox(transport)
    _ = try await uploadAlbumsWithDeadline([snow], device: "Ana's phone", through: outbox)

    let line = try await withDeadline(.seconds(2), "submitSharedForm(_:through:)") {
      let form = PhotoUploadForm(
        endpoint: "/share", fields: ["album": "Sunset", "caption": "from the pier"],
        files: sunsetPhotos)
      return await submitSharedForm(form, through: outbox)
    }

    let expected = PostedForm(
      endpoint: "/share",
      fields: ["album": "Sunset", "caption": "from the pier", "upload-id": "2"],
      files: sunsetPhotos)
    let problem = formProblem(
      transport.posts.dropFirst().first, expected: expected,
      what: "the share extension's form (upload 2)")
    #expect(
      problem == nil,
      Comment(
        rawValue: (problem ?? "") + ". submitSharedForm must post the form it is given, "
          + "with every field and file the share extension put in it"))
    #expect(
      line == "Sunset: 2 photos, 7 bytes, upload 2",
      Comment(
        rawValue: "submitSharedForm returned \"\(line)\", not \"Sunset: 2 photos, 7 bytes, "
          + "upload 2\". " + lineHint([line], ["Sunset: 2 photos, 7 bytes, upload 2"])))
    postedOffTheMainActor(transport)
  }

  @Test("A form without an album is summed up as Untitled")
  func formWithoutAnAlbum() async throws {
    let transport = AlbumUploadRecorder()
    let outbox = await makeAlbumOutbox(transport)

    let line = try await withDeadline(.seconds(2), "submitSharedForm(_:through:)") {
      let form = PhotoUploadForm(endpoint: "/share", files: sunsetPhotos)
      return await submitSharedForm(form, through: outbox)
    }

    #expect(line == "Untitled: 2 photos, 7 bytes, upload 1")
  }

  @Test("A refused form from the share extension is retried exactly as it was sent")
  func refusedSharedFormIsRetriedAsSent() async throws {
    let transport = AlbumUploadRecorder { $0.fields["attempt"] != nil }
    let outbox = await makeAlbumOutbox(transport)

    _ = try await withDeadline(.seconds(2), "submitSharedForm(_:through:)") {
      let form = PhotoUploadForm(
        endpoint: "/share", fields: ["album": "Sunset"], files: sunsetPhotos)
      return await submitSharedForm(form, through: outbox)
    }
    let taken = try await withDeadline(.seconds(2), "retryRefused()") {
      await outbox.retryRefused()
    }

    let expected = PostedForm(
      endpoint: "/share", fields: ["album": "Sunset", "upload-id": "1", "attempt": "2"],
      files: sunsetPhotos)
    let problem = formProblem(
      transport.posts.dropFirst().first, expected: expected,
      what: "the retry of the share extension's form")
    #expect(
      problem == nil,
      Comment(
        rawValue: (problem ?? "") + ". The outbox keeps a refused form and posts it again "
          + "as it was sent, with its attempt field counted up"))
    #expect(taken == 1, "retryRefused() must return how many forms the server took: 1")
    postedOffTheMainActor(transport)
  }

  @Test("Called from the main actor, the uploads still post off the main actor")
  func postsOffTheMainActorWhenCalledFromIt() async throws {
    let transport = AlbumUploadRecorder()
    let outbox = await makeAlbumOutbox(transport)

    let lines = try await withDeadline(
      .seconds(2), "uploadAlbums(_:device:through:) and submitSharedForm(_:through:)"
    ) {
      await uploadFromTheMainActor(through: outbox)
    }

    #expect(
      lines.count == 3 && lines[2].hasSuffix("upload 3"),
      "called from the main actor, the uploads must work as they do anywhere else")
    postedOffTheMainActor(transport)
  }

  @Test("Many uploads at once through one outbox, with retries in between")
  func manyUploadsAtOnce() async throws {
    // Every first post of an album whose title ends in an even number is refused; retries
    // are taken.
    let transport = AlbumUploadRecorder { form in
      form.fields["attempt"] != nil
        || !(form.fields["album"]?.last?.wholeNumberValue.map { $0.isMultiple(of: 2) } ?? false)
    }
    let outbox = await makeAlbumOutbox(transport)
    let callers = 6
    let albumsEach = 5
    let albums = (0..<callers).map { caller in
      (0..<albumsEach).map { index in
        UploadAlbum(
          title: "Trip \(caller)-\(index)",
          photos: (0...index).map { UploadPhoto(name: "p\(caller)-\(index)-\($0)", bytes: [1, 2]) })
      }
    }

    // Without the pool check, which holds all of the pool's threads but one (for every
    // test of the process): posts that overlap need two threads to overlap on.
    let lines = try await withoutPoolCheck {
      try await withDeadline(.seconds(5), "uploadAlbums(_:device:through:)", checksPool: false) {
        try await withThrowingTaskGroup(of: (Int, [String]).self) { group in
          for caller in 0..<callers {
            group.addTask {
              (
                caller,
                await uploadAlbums(albums[caller], device: "phone \(caller)", through: outbox)
              )
            }
          }
          // Retries run between the uploads, on the same outbox.
          group.addTask {
            for _ in 0..<10 {
              _ = await outbox.retryRefused()
              await Task.yield()
            }
            return (-1, [])
          }
          var lines = [[String]](repeating: [], count: callers)
          for try await (caller, callerLines) in group where caller >= 0 {
            lines[caller] = callerLines
          }
          return lines
        }
      }
    }
    _ = try await withDeadline(.seconds(2), "retryRefused()") { await outbox.retryRefused() }

    let posts = transport.posts
    #expect(
      transport.mostPostsAtOnce == 1,
      Comment(
        rawValue: "\(transport.mostPostsAtOnce) posts were under way at once: the outbox "
          + "must post one form at a time. An actor does that only while each send runs "
          + "without a suspension point: a post handed to a Task (or awaited elsewhere) frees "
          + "the actor, and the next send posts meanwhile"))
    let firstPosts = posts.filter { $0.fields["attempt"] == nil }
    let retries = posts.filter { $0.fields["attempt"] != nil }
    let ids = firstPosts.compactMap { $0.fields["upload-id"].flatMap { Int($0) } }
    #expect(
      ids.sorted() == Array(1...(callers * albumsEach)),
      Comment(
        rawValue: "\(callers) callers uploaded \(albumsEach) albums each at once, and the "
          + "first posts carried the upload IDs \(ids.sorted()): every album's form must be "
          + "posted once, with an ID of its own"))
    for caller in 0..<callers {
      for (index, album) in albums[caller].enumerated() {
        let first = firstPosts.first { $0.fields["album"] == album.title }
        let uploadID = first?.fields["upload-id"].flatMap { Int($0) } ?? 0
        let what =
          "the form of album \"\(album.title)\" (caller \(caller), at the same time as "
          + "\(callers - 1) others)"
        if let problem = formProblem(
          first, expected: albumForm(album, device: "phone \(caller)", uploadID: uploadID),
          what: what)
        {
          Issue.record(
            Comment(
              rawValue: problem + ". Uploads at the same time must not share or change each "
                + "other's forms"))
          return
        }
        let line = lines[caller].indices.contains(index) ? lines[caller][index] : "(none)"
        let expectedLine =
          "\(album.title): \(index + 1) photos, \(2 * (index + 1)) bytes, upload \(uploadID)"
        guard line == expectedLine else {
          Issue.record(
            Comment(
              rawValue: "the line for album \"\(album.title)\" was \"\(line)\", not "
                + "\"\(expectedLine)\", while others uploaded at the same time. "
                + lineHint([line], [expectedLine])))
          return
        }
        guard index.isMultiple(of: 2) else { continue }
        let retried = retries.filter { $0.fields["album"] == album.title }
        let expectedRetry = albumForm(
          album, device: "phone \(caller)", uploadID: uploadID, attempt: 2)
        if retried.count != 1 || retried.first != expectedRetry {
          let problem =
            formProblem(
              retried.first, expected: expectedRetry, what: "the retry of \"\(album.title)\"")
            ?? "the refused album \"\(album.title)\" was retried \(retried.count) times, not once"
          Issue.record(
            Comment(
              rawValue: problem + ". "
                + (sharedHint(retried.first, expectedRetry)
                  ?? "A refused form must be retried as it was sent, once it is taken")))
          return
        }
      }
    }
    postedOffTheMainActor(transport)
  }
}

// MARK: Albums

private let beach = UploadAlbum(
  title: "Beach",
  photos: [
    UploadPhoto(name: "waves.jpg", bytes: [1, 2, 3, 4, 5]),
    UploadPhoto(name: "sand.jpg", bytes: [6, 7, 8, 9]),
    UploadPhoto(name: "gulls.jpg", bytes: [10, 11, 12, 13, 14]),
  ])
private let snow = UploadAlbum(
  title: "Snow",
  photos: [
    UploadPhoto(name: "peak.jpg", bytes: [20, 21, 22, 23]),
    UploadPhoto(name: "skis.jpg", bytes: [24, 25, 26, 27, 28]),
  ])
private let mountains = UploadAlbum(
  title: "Mountains", photos: [UploadPhoto(name: "ridge.jpg", bytes: [30, 31, 32])])
private let emptyAlbum = UploadAlbum(title: "Empty", photos: [])
private let sunsetPhotos = [
  UploadPhoto(name: "sun.jpg", bytes: [40, 41, 42]),
  UploadPhoto(name: "pier.jpg", bytes: [43, 44, 45, 46]),
]

/// The form the server must get for `album`.
private func albumForm(
  _ album: UploadAlbum, device: String, uploadID: Int, attempt: Int? = nil
) -> PostedForm {
  var fields = ["device": device, "album": album.title, "upload-id": String(uploadID)]
  if let attempt { fields["attempt"] = String(attempt) }
  return PostedForm(endpoint: "/albums", fields: fields, files: album.photos)
}

// MARK: The network

/// Marks the main queue, so that code can tell it runs there (as main-actor code does).
private let mainQueueMark: DispatchSpecificKey<Bool> = {
  let key = DispatchSpecificKey<Bool>()
  DispatchQueue.main.setSpecific(key: key, value: true)
  return key
}()

/// A transport that records every form posted, and whether it was posted on the main
/// thread (or the main actor); `takes` decides which forms the server takes.
private final class AlbumUploadRecorder: PhotoUploadTransport {
  private let takes: @Sendable (PostedForm) -> Bool
  private let state = Mutex<(posts: [PostedForm], onMainActor: Int)>(([], 0))
  /// Posts under way now, and the most that ever were at once: the outbox posts one at a
  /// time, so never more than one.
  private let inside = Atomic(0)
  private let mostAtOnce = Atomic(0)

  init(takes: @escaping @Sendable (PostedForm) -> Bool = { _ in true }) {
    self.takes = takes
  }

  func post(_ form: PostedForm) -> Bool {
    // The main actor runs its jobs on the main queue, which is not always the main thread
    // (under `swift test` on Linux it is drained by another thread): look for both.
    let onMainActor = Thread.isMainThread || DispatchQueue.getSpecific(key: mainQueueMark) != nil
    let now = inside.add(1, ordering: .sequentiallyConsistent).newValue
    _ = mostAtOnce.max(now, ordering: .sequentiallyConsistent)
    defer { inside.subtract(1, ordering: .sequentiallyConsistent) }
    state.withLock {
      $0.posts.append(form)
      if onMainActor { $0.onMainActor += 1 }
    }
    // The server takes a moment to answer, as a real one does; a post that another one
    // overlaps overlaps it for that long.
    usleep(3_000)
    return takes(form)
  }

  var posts: [PostedForm] { state.withLock { $0.posts } }
  var mostPostsAtOnce: Int { mostAtOnce.load(ordering: .sequentiallyConsistent) }
  var postsOnTheMainActor: Int { state.withLock { $0.onMainActor } }
}

/// The outbox, made on the main actor: a test compiles whether the answer keeps the outbox
/// an actor or moves it to the main actor, and then finds out where it posts.
@MainActor
private func makeAlbumOutbox(_ transport: AlbumUploadRecorder) -> UploadOutbox {
  UploadOutbox(transport: transport)
}

/// Uploads two albums and a shared form from the main actor; returns the three lines.
@MainActor
private func uploadFromTheMainActor(through outbox: UploadOutbox) async -> [String] {
  let lines = await uploadAlbums([beach, snow], device: "Ana's phone", through: outbox)
  let form = PhotoUploadForm(endpoint: "/share", fields: ["album": "Sunset"], files: sunsetPhotos)
  return lines + [await submitSharedForm(form, through: outbox)]
}

private func uploadAlbumsWithDeadline(
  _ albums: [UploadAlbum], device: String, through outbox: UploadOutbox,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [String] {
  try await withDeadline(
    .seconds(2), "uploadAlbums(_:device:through:)", sourceLocation: sourceLocation
  ) {
    await uploadAlbums(albums, device: device, through: outbox)
  }
}

private func postedOffTheMainActor(
  _ transport: AlbumUploadRecorder, sourceLocation: SourceLocation = #_sourceLocation
) {
  let count = transport.postsOnTheMainActor
  #expect(
    count == 0,
    Comment(
      rawValue: "\(count) of \(transport.posts.count) forms were posted on the main actor: "
        + "post blocks its thread until the server answers, so the app's screens froze "
        + "meanwhile. Moving the outbox or the uploads to the main actor makes the error go "
        + "away but puts the network on the main thread; keep the outbox's work off the main "
        + "actor"),
    sourceLocation: sourceLocation)
}

// MARK: What went wrong, in the learner's terms

/// What differs between the form the server got and the one it should have got, or nil.
private func formProblem(_ posted: PostedForm?, expected: PostedForm, what: String) -> String? {
  guard let posted else { return "\(what) was never posted" }
  if posted == expected { return nil }
  var problems: [String] = []
  if posted.endpoint != expected.endpoint {
    problems.append("was posted to \(posted.endpoint), not \(expected.endpoint)")
  }
  let missing = expected.fields.keys.filter { posted.fields[$0] == nil }.sorted()
  if !missing.isEmpty {
    problems.append(
      "arrived without its field\(missing.count == 1 ? "" : "s") "
        + missing.joined(separator: ", "))
  }
  let extra = posted.fields.keys.filter { expected.fields[$0] == nil }.sorted()
  if !extra.isEmpty {
    problems.append(
      "arrived with field\(extra.count == 1 ? "" : "s") it should not have: "
        + extra.map { "\($0) = \(posted.fields[$0]!)" }.joined(separator: ", "))
  }
  for key in expected.fields.keys.sorted() {
    if let value = posted.fields[key], value != expected.fields[key] {
      problems.append("had \(key) = \"\(value)\", not \"\(expected.fields[key]!)\"")
    }
  }
  if posted.files != expected.files {
    problems.append(
      "carried the photos \(posted.files.map(\.name)), not \(expected.files.map(\.name))")
  }
  return "\(what) " + problems.joined(separator: "; it ")
}

/// The cause when a kept form changed after the hand-off: it now holds another album.
private func sharedHint(_ posted: PostedForm?, _ expected: PostedForm) -> String? {
  guard let posted, posted.fields["album"] != expected.fields["album"] else { return nil }
  return "The form the outbox kept changed after it was handed over: it now holds album "
    + "\"\(posted.fields["album"] ?? "")\". The caller and the outbox share one form, and "
    + "the caller emptied and refilled it for the next album. Once a form is handed to the "
    + "outbox it is the outbox's alone: the next album needs a form of its own, or the "
    + "outbox a value of its own"
}

/// What is wrong with the lines, when their upload IDs are not the outbox's.
private func lineHint(_ lines: [String], _ expected: [String]) -> String {
  if lines.contains(where: { $0.hasSuffix("upload ?") }) {
    return "A line said \"upload ?\": it was written from a form that never got its upload "
      + "ID (the caller's own copy), not from what the outbox gave the form it was sent. "
      + "The outbox knows the ID; have it hand the ID back"
  }
  return "Each line is written from the form as the caller built it, with the upload ID the "
    + "outbox gave that form"
}
