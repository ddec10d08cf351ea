// FaultProxy: a loopback TCP proxy in front of one server (a test's redis-server), for tests that
// need a connection to fail at a precise point of its conversation rather than at a moment in
// time.
//
// It listens on a free 127.0.0.1 port, opens one upstream connection per client connection and
// forwards bytes both ways. Armed with a fault, it watches what clients send; the first client
// chunk that contains the fault's trigger (a byte string, e.g. "HGETALL") fires it on that
// connection, and the server's bytes that follow on it are then:
//   - Cut: forwarded up to the end of the first `whole_replies` complete RESP replies plus
//     `partial_bytes` bytes of the next one, after which both sides of the connection are closed
//     (a connection lost in the middle of a batch, part of its replies delivered);
//   - Hold: kept, not forwarded, until Release() (a server that stalls on that batch while the
//     connection stays up); Release() forwards them in order and the connection carries on.
// The replies are counted from the first server byte after the triggering chunk: the test makes
// sure no earlier reply is still due on that connection. A fault fires once; connections made
// later and commands sent later pass through.
//
// Thread affinity: any thread may call the methods (state behind a mutex); the forwarding runs on
// the proxy's own thread. Ownership: owns its listener, its connections and its thread; the
// destructor closes all of them.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace rankd::redis::testing {

class FaultProxy {
 public:
  // Starts forwarding 127.0.0.1:port() to 127.0.0.1:upstream_port. Throws std::runtime_error
  // when it cannot listen.
  explicit FaultProxy(int upstream_port);
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;
  ~FaultProxy();

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Arms a cut (replaces any armed fault that has not fired).
  void ArmCut(std::string trigger, std::size_t whole_replies, std::size_t partial_bytes = 1);
  // Arms a hold (replaces any armed fault that has not fired).
  void ArmHold(std::string trigger);
  // Forwards what a hold kept; the held connection passes everything through again.
  void Release();

  // True once the armed fault fired (its trigger was seen).
  bool fired() const;
  // True once a fired cut has closed its connection.
  bool cut_done() const;
  // Client connections accepted so far.
  std::size_t accepted() const;

 private:
  struct Fault {
    enum class Kind { kCut, kHold } kind = Kind::kCut;
    std::string trigger;
    std::size_t whole_replies = 0;
    std::size_t partial_bytes = 1;
  };
  // The forwarding loop (the proxy's thread).
  void Run();
  // Makes Run() look at the state again.
  void Wake();

  int upstream_port_ = 0;
  int port_ = 0;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: a method changed the state, or the destructor wants it to stop
  mutable std::mutex mu_;
  std::optional<Fault> armed_;  // guarded by mu_
  bool fired_ = false;          // guarded by mu_
  bool cut_done_ = false;       // guarded by mu_
  bool release_ = false;        // guarded by mu_: forward what is held
  bool stop_ = false;           // guarded by mu_
  std::size_t accepted_ = 0;    // guarded by mu_
  std::thread thread_;
};

}  // namespace rankd::redis::testing
