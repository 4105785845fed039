import Foundation
import LegacyKit

// The runtime named the culprit: "avatar(forKey:from:) leaked its continuation without
// resuming it". A checked continuation notices when the last reference to it goes away
// unresumed, here when the avatar server's handler returned and was released, and names
// the function that created it. The fix is one line, on the `(nil, nil)` path.

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
      // Every combination the avatar server can send has its own case, so the compiler
      // checks that each one resumes.
      switch (image, error) {
      case (_, let error?):
        continuation.resume(throwing: error)
      case (let image?, nil):
        continuation.resume(returning: image)
      case (nil, nil):
        // No avatar uploaded: the card shows initials.
        continuation.resume(returning: nil)
      }
    }
  }
}
