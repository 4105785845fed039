// Chapter 8, overview: the legacy client's shape, checked against the real ChatKit.
import ChatKit

// listing: delegate
final class Transcript: ChatConnectionDelegate {
  func chatConnection(_ connection: ChatConnection, didReceive line: String) {
    // listing: elide // "NAME: text", "* NAME joined", "* NAME left" or "! …"
    print(line)
    // listing: show
  }

  func chatConnection(_ connection: ChatConnection, didDisconnectWithError error: Error?) {
    // listing: elide // nil after disconnect(), otherwise why the connection was lost
    print("ended", error as Any)
    // listing: show
  }
}
// listing: end

func chat(
  over connection: ChatConnection, joined: @escaping (Error?) -> Void,
  sent: @escaping (Error?) -> Void
) {
  // listing: calls
  connection.connect(host: "127.0.0.1", port: 4000, name: "alice") { error in joined(error) }
  connection.send("hello") { error in sent(error) }
  connection.disconnect()
  // listing: end
}
