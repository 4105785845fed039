// Chapter 1, exercise 1.3: a switch over a pair of optionals names all four combinations,
// and optional patterns bind the values without force-unwrapping. A contact card, not a
// callback: the exercise's encoder is for you to write.

// listing: reach
/// The line a contact card shows under a name, from whatever the address book knows.
func howToReach(phone: String?, email: String?) -> String {
  switch (phone, email) {
  case (let phone?, nil): return "Call \(phone)"
  case (nil, let email?): return "Write to \(email)"
  case (let phone?, let email?): return "Call \(phone) or write to \(email)"
  case (nil, nil): return "No phone number or e-mail address yet"
  }
}
// listing: end
