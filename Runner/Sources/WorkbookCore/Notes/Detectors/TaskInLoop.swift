import Foundation

/// ``NoteDetector/taskInLoop``: one unstructured task per element loses the elements' order,
/// and nothing awaits or cancels the tasks with the caller.
extension CodeText {
  func tasksInLoops() -> [Int] {
    let loops = loopRegions()
    return find(Self.taskClosure).filter { inside($0, loops) }
  }
}
