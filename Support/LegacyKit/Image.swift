import Foundation

/// A picture, as the simulated camera and photo library of LegacyKit hand it around.
///
/// It carries only what the exercises compare: a name and a size. ``fileData`` is the file a
/// camera would write for it, in a tiny made-up format that ``init(fileData:)`` reads back.
public struct Image: Hashable, Sendable, CustomStringConvertible {
  public var name: String
  public var width: Int
  public var height: Int

  public init(name: String, width: Int, height: Int) {
    self.name = name
    self.width = width
    self.height = height
  }

  public var description: String { "Image(\"\(name)\", \(width)×\(height))" }

  private static let signature = "LKIMG1"

  /// The bytes of an image file holding this picture.
  public var fileData: Data {
    Data("\(Image.signature)\n\(name)\n\(width)x\(height)".utf8)
  }

  /// Reads an image file; `nil` when the bytes are not one (truncated, corrupt, not an image).
  public init?(fileData: Data) {
    let lines = String(decoding: fileData, as: UTF8.self).split(
      separator: "\n", omittingEmptySubsequences: false)
    guard lines.count == 3, lines[0] == Image.signature else { return nil }
    let size = lines[2].split(separator: "x")
    guard size.count == 2, let width = Int(size[0]), let height = Int(size[1]) else { return nil }
    self.init(name: String(lines[1]), width: width, height: height)
  }
}
