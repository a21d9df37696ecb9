//! No network inside: TCP to a loopback listener of ours, DNS, UDP to a loopback socket of ours.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use toolbridge_sandbox::Limits;

#[tokio::test]
async fn tcp_to_a_host_loopback_listener_fails() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    each_backend(Limits::default(), |sb| async move {
        let ws = workspace(&sb);
        let code = format!(
            "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('CONNECTED')\nexcept OSError as e:\n    print('BLOCKED', e)\n"
        );
        let out = python(&sb, ws.path(), &code).await;
        out.assert_ok();
        assert!(out.stdout.starts_with("BLOCKED"), "{}", out.stdout);
    })
    .await;
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(
        accepted.is_err(),
        "the listener got a connection from the sandbox"
    );
}

#[tokio::test]
async fn dns_lookup_fails() {
    each_backend(Limits::default(), |sb| async move {
        let ws = workspace(&sb);
        let code = "import socket\ntry:\n    print('RESOLVED', socket.getaddrinfo('example.com', 443))\nexcept OSError as e:\n    print('BLOCKED', e)\n";
        let out = python(&sb, ws.path(), code).await;
        out.assert_ok();
        assert!(out.stdout.starts_with("BLOCKED"), "{}", out.stdout);
    })
    .await;
}

#[tokio::test]
async fn udp_to_a_host_loopback_socket_is_not_received() {
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = socket.local_addr().unwrap().port();
    each_backend(Limits::default(), |sb| async move {
        let ws = workspace(&sb);
        let code = format!(
            "import socket\ntry:\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    s.sendto(b'leak', ('127.0.0.1', {port}))\n    print('SENT')\nexcept OSError as e:\n    print('BLOCKED', e)\n"
        );
        let out = python(&sb, ws.path(), &code).await;
        out.assert_ok();
        eprintln!("udp inside: {}", out.stdout.trim());
    })
    .await;
    let mut buf = [0u8; 64];
    let received =
        tokio::time::timeout(Duration::from_millis(300), socket.recv_from(&mut buf)).await;
    assert!(
        received.is_err(),
        "the host socket received a datagram from the sandbox"
    );
}
