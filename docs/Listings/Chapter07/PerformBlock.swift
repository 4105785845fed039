// Chapter 7, exercise 7.2: the legacy way to touch a context's records.
import LegacyKit

func addNote(_ title: String, to context: RecordContext, completion: @escaping (Int) -> Void) {
  // listing: perform
  context.perform {
    context.insert(title)
    completion(context.records.count)
  }
  // listing: end
}
