import Foundation
import LegacyKit

// TODO: Some profile cards never finish loading: one path through this file never resumes
// its continuation. Find it and make it resume, with what the caller should get there.
// `make check EXERCISE=3.1` tells you where to look.

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
