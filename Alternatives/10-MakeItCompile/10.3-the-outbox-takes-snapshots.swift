// Code from a photo app, written before Swift 6. It builds in the Swift 5 language mode and
// has worked for years; in the Swift 6 mode it does not compile. Make it compile, and keep
// every promise its doc comments make.

/// A multipart form being put together for an upload: its fields, and its files in the
/// order they were attached.
final class PhotoUploadForm {
  let endpoint: String
  private(set) var fields: [String: String]
  private(set) var files: [UploadPhoto]

  init(endpoint: String, fields: [String: String] = [:], files: [UploadPhoto] = []) {
    self.endpoint = endpoint
    self.fields = fields
    self.files = files
  }

  /// Sets `field` to `value`, replacing any value it had.
  func set(_ value: String, for field: String) {
    fields[field] = value
  }

  func attach(_ file: UploadPhoto) {
    files.append(file)
  }

  func removeFiles() {
    files.removeAll()
  }

  /// The bytes of all its files.
  var byteCount: Int {
    files.reduce(0) { $0 + $1.bytes.count }
  }

  /// The form as it goes over the wire.
  var posted: PostedForm {
    PostedForm(endpoint: endpoint, fields: fields, files: files)
  }
}

/// Posts forms to the server, one at a time, and keeps every form the server refused, to
/// post it again when the network is back. The transport's `post` blocks until the server
/// answers, so the outbox never posts on the main thread.
actor UploadOutbox {
  private let transport: any PhotoUploadTransport
  private var lastUploadID = 0
  private var refused: [PostedForm] = []

  init(transport: any PhotoUploadTransport) {
    self.transport = transport
  }

  /// Gives `form` this outbox's next upload ID (1, then 2, 3, ...) in its "upload-id" field,
  /// posts it, and keeps it if the server refuses it. Returns the upload ID.
  ///
  /// The outbox takes a `Sendable` snapshot of the form, not the caller's form: what it
  /// keeps is its own, and the caller may go on changing its form.
  @discardableResult
  func send(_ form: PostedForm) -> Int {
    lastUploadID += 1
    let stamped = form.setting(String(lastUploadID), for: "upload-id")
    if !transport.post(stamped) {
      refused.append(stamped)
    }
    return lastUploadID
  }

  /// Posts every refused form again, in the order they were refused, exactly as it was
  /// sent but for its "attempt" field: 2 on its first retry, 3 on the next. Keeps those the
  /// server refuses again, and returns how many it took.
  func retryRefused() -> Int {
    let forms = refused
    refused = []
    for form in forms {
      let attempt = (form.fields["attempt"].flatMap { Int($0) } ?? 1) + 1
      let again = form.setting(String(attempt), for: "attempt")
      if !transport.post(again) {
        refused.append(again)
      }
    }
    return forms.count - refused.count
  }
}

extension PostedForm {
  /// This form with `field` set to `value`.
  func setting(_ value: String, for field: String) -> PostedForm {
    var fields = fields
    fields[field] = value
    return PostedForm(endpoint: endpoint, fields: fields, files: files)
  }
}

/// The activity log's line for an uploaded form: "Beach: 3 photos, 1234 bytes, upload 7",
/// with its "album" field, its files, and the upload ID the outbox gave it.
func activityLine(for form: PhotoUploadForm, uploadID: Int) -> String {
  "\(form.fields["album"] ?? "Untitled"): \(form.files.count) photos, "
    + "\(form.byteCount) bytes, upload \(uploadID)"
}

/// Uploads each album as a form (endpoint "/albums", the device's name in its "device"
/// field, the album's title in its "album" field, the album's photos as its files), one
/// album after the other, and returns the activity log's line for each, in order.
func uploadAlbums(
  _ albums: [UploadAlbum], device: String, through outbox: UploadOutbox
) async -> [String] {
  let form = PhotoUploadForm(endpoint: "/albums")
  form.set(device, for: "device")
  var lines: [String] = []
  for album in albums {
    form.removeFiles()
    form.set(album.title, for: "album")
    for photo in album.photos {
      form.attach(photo)
    }
    let uploadID = await outbox.send(form.posted)
    lines.append(activityLine(for: form, uploadID: uploadID))
  }
  return lines
}

/// Uploads a form that the share extension put together, and returns its activity log
/// line. The extension is done with the form once it calls this: it never uses it again.
func submitSharedForm(_ form: PhotoUploadForm, through outbox: UploadOutbox) async -> String {
  let uploadID = await outbox.send(form.posted)
  return activityLine(for: form, uploadID: uploadID)
}

// MARK: The app's model and its network layer: leave it as it is.

/// A photo, as it is uploaded.
struct UploadPhoto: Sendable, Equatable {
  let name: String
  let bytes: [UInt8]
}

/// An album of photos.
struct UploadAlbum: Sendable, Equatable {
  let title: String
  let photos: [UploadPhoto]
}

/// A form as the server receives it.
struct PostedForm: Sendable, Equatable {
  let endpoint: String
  let fields: [String: String]
  let files: [UploadPhoto]
}

/// The app's network layer. `post` sends a form and blocks its thread until the server
/// answers: true when the server took the form. It may be called from any thread but the
/// main thread, which it would freeze.
protocol PhotoUploadTransport: Sendable {
  func post(_ form: PostedForm) -> Bool
}
