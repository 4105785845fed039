import Foundation

/// ``NoteDetector/mainActorRunOnMainActor``: code already on the main actor gains nothing from
/// `MainActor.run`, and gets a suspension point it did not ask for.
extension CodeText {
  func mainActorRunsOnTheMainActor() -> [Int] {
    let regions = mainActorRegions()
    return find(#"\bMainActor\.run\b"#).filter { run in
      guard inside(run, regions) else { return false }
      // Blocks between the main-actor region and the call that leave the main actor.
      for block in enclosingBlocks(of: run) {
        if regions.contains(block) { break }
        let opener = header(of: block.lowerBound)
        if opener.range(
          of: #"Task\.detached|\bnonisolated\b|@concurrent|addTask|\.async(After)?\b|Thread\b"#,
          options: .regularExpression) != nil
        {
          return false
        }
      }
      return true
    }
  }
}
