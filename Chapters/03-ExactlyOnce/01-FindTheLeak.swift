import Foundation
import LegacyKit

// TODO: One path through this file never resumes its continuation, so some profile cards
// never finish loading. Run `make check EXERCISE=3.1` and read the line that starts with
// "the runtime said:": it names the function that dropped its continuation. Find the path
// in that function that returns without resuming, and make it resume.

/// What the profile screen shows for an account.
struct ProfileCard: Equatable, Sendable {
  var name: String
  /// The avatar image, or `nil` when the user never uploaded one (the screen then shows
  /// the user's initials).
  var avatar: Data?
}

/// Loads the account with identifier `id`, then its avatar.
func loadProfileCard(id: Int, from service: AccountService) async throws -> ProfileCard {
  let account = try await account(id: id, from: service)
  let avatar = try await avatar(forKey: account.avatarKey, from: service)
  return ProfileCard(name: account.displayName, avatar: avatar)
}

private func account(id: Int, from service: AccountService) async throws -> AccountRecord {
  try await withCheckedThrowingContinuation { continuation in
    service.fetchAccount(id: id) { result in
      continuation.resume(with: result)
    }
  }
}

private func avatar(forKey key: String, from service: AccountService) async throws -> Data? {
  try await withCheckedThrowingContinuation { continuation in
    service.fetchAvatar(key: key) { image, error in
      if let error {
        continuation.resume(throwing: error)
        return
      }
      guard let image else {
        // No avatar uploaded: the screen shows initials instead.
        return
      }
      continuation.resume(returning: image)
    }
  }
}
