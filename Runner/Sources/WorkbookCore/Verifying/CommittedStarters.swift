import Foundation

/// Which copy of each starter `workbook verify` grades: the starter as shipped, never the
/// learner's work in progress.
///
/// For each exercise the working copy in `Chapters/` is used when its digest is the
/// recorded `starterDigest` (untouched, or a starter a maintainer changed and fingerprinted);
/// otherwise the copy committed at `HEAD` (`git show`), when that one matches. When neither
/// matches, a maintainer changed a committed starter without `make fingerprint`, and only
/// then does verify suggest it.
public struct CommittedStarters: Sendable {
  public enum Origin: Sendable, Equatable {
    /// The file in Chapters/ is the starter.
    case workingCopy
    /// The learner changed Chapters/; the committed file is the starter.
    case committed
    /// Neither matches starterDigest: the problem to report.
    case mismatch(String)
  }

  public struct Starter: Sendable {
    public var path: String
    public var origin: Origin
    /// The committed bytes, for `.committed`.
    public var content: Data?
  }

  /// Per exercise id.
  public var starters: [String: Starter]
  /// Said once when the committed files cannot be read (not a git checkout, no git).
  public var note: String?

  /// Looks at every starter of `chapters`.
  public static func resolve(root: URL, chapters: [Chapter]) -> CommittedStarters {
    var result = CommittedStarters(starters: [:], note: nil)
    let git = GitFiles(root: root)
    if !git.available {
      result.note =
        "cannot read the committed starters (\(git.why)); the files in Chapters/ were "
        + "checked as they are, so an edited starter fails below"
    }
    for chapter in chapters {
      for exercise in chapter.exercises {
        let path = chapter.starterPath(exercise)
        let working = Digest.ofFile(root.appendingPathComponent(path))
        if working == exercise.starterDigest || !git.available {
          result.starters[exercise.id] = Starter(
            path: path,
            origin: working == exercise.starterDigest
              ? .workingCopy
              : .mismatch(
                "digest \(working ?? "(unreadable)") differs from starterDigest "
                  + "\"\(exercise.starterDigest)\""))
          continue
        }
        guard let committed = git.show(path) else {
          result.starters[exercise.id] = Starter(
            path: path,
            origin: .mismatch(
              "\(path) is not committed at HEAD, and the file in Chapters/ does not match "
                + "starterDigest \"\(exercise.starterDigest)\""))
          continue
        }
        let digest = Digest.of(committed)
        if digest == exercise.starterDigest {
          result.starters[exercise.id] = Starter(
            path: path, origin: .committed, content: committed)
        } else {
          result.starters[exercise.id] = Starter(
            path: path,
            origin: .mismatch(
              "the committed starter's digest \(digest) differs from starterDigest "
                + "\"\(exercise.starterDigest)\"; if you changed this starter on purpose, run "
                + "`make fingerprint` and commit workbook.json with it"))
        }
      }
    }
    return result
  }
}
