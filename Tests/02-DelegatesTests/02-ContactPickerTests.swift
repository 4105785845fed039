import LegacyKit
import Testing
import WorkbookTesting

@testable import Delegates

private let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(200))]
/// Pickers that tell their delegate the same answer twice.
private let twiceScripts: [CallbackScript] = [
  CallbackScript(timing: .synchronously, times: 2),
  .twice,
  CallbackScript(timing: .after(.milliseconds(100)), times: 2),
]

private let ada = Contact(name: "Ada Lovelace", phoneNumber: "+44 20 7946 0018")
private let grace = Contact(name: "Grace Hopper", phoneNumber: "+1 202 555 0143")

private let selectHint =
  "contactPicker(_:didSelect:) must resume the stored continuation with the contact"
private let cancelHint =
  "nothing resumes the continuation when the user cancels; contactPickerDidCancel(_:) is "
  + "an optional delegate method, so the compiler never asked you to implement it"
private let againHint =
  "the continuation of the first pick is still stored; take it out (leaving nil) when you "
  + "resume it"

@Suite("2.2 Contact picker")
struct ContactPickerTests {
  @Test("Returns the contact the user selects", arguments: scripts)
  func returnsTheSelectedContact(script: CallbackScript) async throws {
    let controller = ContactPickerViewController(answers: [.choose(ada)], script: script)
    let picker = ContactPicker(controller: controller)

    let contact = try await withDeadline(.seconds(2), "pickContact()", hint: selectHint) {
      await picker.pickContact()
    }

    #expect(contact == ada)
    #expect(controller.presentationCount == 1, "pickContact() must present the picker once")
  }

  @Test("Returns nil when the user cancels", arguments: scripts)
  func returnsNilWhenCancelled(script: CallbackScript) async throws {
    let controller = ContactPickerViewController(answers: [.cancel], script: script)
    let picker = ContactPicker(controller: controller)

    let contact = try await withDeadline(.seconds(2), "pickContact()", hint: cancelHint) {
      await picker.pickContact()
    }

    #expect(contact == nil, "a cancelled pick returns nil")
    #expect(controller.presentationCount == 1, "pickContact() must present the picker once")
  }

  /// The tests in which a later report can reach an earlier continuation. A wrong answer
  /// crashes them, so they run one at a time and a crash names a single test.
  @Suite("One pick after another", .serialized)
  struct OneAfterAnother {
    @Test(
      "The same picker serves one pick after another: cancel, select, cancel, select",
      arguments: scripts)
    func servesOnePickAfterAnother(script: CallbackScript) async throws {
      let controller = ContactPickerViewController(
        answers: [.cancel, .choose(ada), .cancel, .choose(grace)], script: script)
      let picker = ContactPicker(controller: controller)

      var contacts: [Contact?] = []
      for (index, hint) in [cancelHint, againHint, cancelHint, againHint].enumerated() {
        let contact = try await withDeadline(
          .seconds(2), "pickContact() number \(index + 1)", hint: hint
        ) {
          await picker.pickContact()
        }
        contacts.append(contact)
      }

      #expect(contacts == [nil, ada, nil, grace])
      #expect(controller.presentationCount == 4, "each pick presents the picker once")
    }

    @Test("Answers once when the picker reports the same answer twice", arguments: twiceScripts)
    func answersOnceWhenReportedTwice(script: CallbackScript) async throws {
      let controller = ContactPickerViewController(
        answers: [.choose(ada), .cancel], script: script)
      let picker = ContactPicker(controller: controller)

      let selected = try await withDeadline(.seconds(2), "pickContact()", hint: selectHint) {
        await picker.pickContact()
      }
      // Wait for the second report before picking again, so that it cannot be mistaken for
      // the answer to the next pick, and so that a crash it causes happens in this test.
      let selectedTwice = await eventually { controller.reportCount == 2 }
      let cancelled = try await withDeadline(
        .seconds(2), "a second pickContact()", hint: cancelHint
      ) {
        await picker.pickContact()
      }
      let cancelledTwice = await eventually { controller.reportCount == 4 }

      #expect(selected == ada)
      #expect(cancelled == nil)
      #expect(selectedTwice && cancelledTwice, "the picker's second report did not finish")
    }
  }
}
