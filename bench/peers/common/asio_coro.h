// The Boost.Asio types the coroutine peers (echo, HTTP) are written with: an io_context
// executor spelled out (no type-erased any_io_executor on the hot path) and awaitables on it.
// Aliases only; no state.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/basic_signal_set.hpp>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

namespace rankd::bench_peers {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

using Executor = asio::io_context::executor_type;
using Acceptor = asio::basic_socket_acceptor<tcp, Executor>;
using Socket = asio::basic_stream_socket<tcp, Executor>;
using SignalSet = asio::basic_signal_set<Executor>;
template <typename T>
using Awaitable = asio::awaitable<T, Executor>;
inline constexpr asio::use_awaitable_t<Executor> kUseAwaitable;

}  // namespace rankd::bench_peers
