// Chapter 1, exercise 1.3: the four combinations of an optional pair, as a Result.
import Foundation

enum CacheError: Error {
  case emptyReply
}

// listing: outcome
func outcome(_ data: Data?, _ error: (any Error)?) -> Result<Data, any Error> {
  switch (data, error) {
  case (let data?, nil): return .success(data)
  case (nil, let error?): return .failure(error)
  case (let data?, _?): return .success(data)  // both: here the data wins
  case (nil, nil): return .failure(CacheError.emptyReply)
  }
}
// listing: end
