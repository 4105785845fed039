// Chapter 4, exercise 4.4: split keeps empty lines only when asked to.
func splitDemo() -> ([ArraySlice<UInt8>], [ArraySlice<UInt8>]) {
  // listing: split
  let bytes = Array("one\n\ntwo\n".utf8)
  let lineFeed = UInt8(ascii: "\n")
  let short = bytes.split(separator: lineFeed)  // "one", "two"
  let every = bytes.split(separator: lineFeed, omittingEmptySubsequences: false)
  // every: "one", "", "two", "" (the empty line, and the empty rest after the last feed)
  // listing: end
  return (short, every)
}
