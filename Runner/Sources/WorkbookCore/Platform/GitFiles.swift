import Foundation

/// Files as committed at HEAD, read with git.
struct GitFiles {
  let root: URL
  let git: String?
  /// Why the committed files cannot be read, when they cannot.
  let why: String

  init(root: URL) {
    self.root = root
    guard let git = ChildProcess.which("git") else {
      self.git = nil
      why = "git is not installed"
      return
    }
    let inside = try? ChildProcess.run(
      git, ["-C", root.path, "rev-parse", "--verify", "--quiet", "HEAD"])
    if inside?.succeeded == true {
      self.git = git
      why = ""
    } else {
      self.git = nil
      why = "\(root.path) is not a git checkout with a commit"
    }
  }

  var available: Bool { git != nil }

  /// The file at `path` (relative to the root) as committed at HEAD.
  func show(_ path: String) -> Data? {
    guard let git,
      let outcome = try? ChildProcess.run(git, ["-C", root.path, "show", "HEAD:./\(path)"]),
      outcome.succeeded, outcome.omittedBytes == 0
    else { return nil }
    return Data(outcome.stdout.utf8)
  }
}
