import Testing

@testable import WorkbookCore

/// The outline decides only the order of a chapter's rounds (variants that change
/// declarations first); these pin down what counts as a change of declarations.
struct DeclarationOutlineTests {
  static let solution = """
    import Foundation

    /// Doubles.
    public final class Doubler {
      private var count = 0

      public func double(_ value: Int) -> Int {
        count += 1
        return value * 2
      }
    }
    """

  @Test func aChangeInsideABodyKeepsTheOutline() {
    let variant = Self.solution.replacing("return value * 2", with: "return value + value")
    #expect(DeclarationOutline(variant) == DeclarationOutline(Self.solution))
  }

  @Test func commentsBlankLinesAndTrailingSpacesKeepTheOutline() {
    let variant =
      Self.solution.replacing("/// Doubles.", with: "// Doubles, twice.\n\n")
      .replacing("public final class Doubler {", with: "public final class Doubler {  ")
    #expect(DeclarationOutline(variant) == DeclarationOutline(Self.solution))
  }

  @Test func aNewMemberEvenPrivateChangesTheOutline() {
    let variant = Self.solution.replacing(
      "  private var count = 0", with: "  private var count = 0\n  private let lock = NSLock()")
    #expect(DeclarationOutline(variant) != DeclarationOutline(Self.solution))
  }

  @Test func aChangedSignatureOrTopLevelDeclarationChangesTheOutline() {
    let signature = Self.solution.replacing(
      "public func double(_ value: Int) -> Int {",
      with: "public func double(_ value: Int) async -> Int {")
    #expect(DeclarationOutline(signature) != DeclarationOutline(Self.solution))
    let helper = Self.solution + "\nfunc twice(_ value: Int) -> Int { value * 2 }\n"
    #expect(DeclarationOutline(helper) != DeclarationOutline(Self.solution))
  }
}
