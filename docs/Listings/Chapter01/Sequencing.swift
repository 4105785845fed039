// Chapter 1, exercise 1.4: sequencing in async code is the order of the lines. A made-up
// profile service, not the exercise's image downloader.
import Foundation
import LegacyKit

struct User: Sendable { var id: Int, avatarKey: String }
struct Avatar: Sendable { var bytes: Data }
struct Profile: Sendable { var user: User, avatar: Avatar }
struct ServiceError: Error {}

enum StepError: Error {
  case firstStepFailed
  case secondStepFailed
}

final class ProfileService: @unchecked Sendable {
  func fetchUser(id: Int, completion: @escaping (Result<User, ServiceError>) -> Void) {
    CallbackScript.default.deliver { completion(.success(User(id: id, avatarKey: "u\(id)"))) }
  }

  func fetchAvatar(key: String, completion: @escaping (Result<Avatar, ServiceError>) -> Void) {
    CallbackScript.default.deliver { completion(.success(Avatar(bytes: Data(key.utf8)))) }
  }
}

func fetchUser(id: Int, from service: ProfileService) async throws -> User {
  try await withCheckedThrowingContinuation { continuation in
    service.fetchUser(id: id) { result in
      continuation.resume(with: result.mapError { _ in StepError.firstStepFailed })
    }
  }
}

func fetchAvatar(for user: User, from service: ProfileService) async throws -> Avatar {
  try await withCheckedThrowingContinuation { continuation in
    service.fetchAvatar(key: user.avatarKey) { result in
      continuation.resume(with: result.mapError { _ in StepError.secondStepFailed })
    }
  }
}

func loadProfile(id: Int, from service: ProfileService) async throws -> Profile {
  // listing: straight-line
  let user = try await fetchUser(id: id, from: service)
  let avatar = try await fetchAvatar(for: user, from: service)
  return Profile(user: user, avatar: avatar)
  // listing: end
}
