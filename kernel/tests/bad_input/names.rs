//! Lock names: every validation rule, each with its error.

use super::prelude::*;

#[track_caller]
fn invalid_name(r: Result<LockName, Error>, rule: &[&str]) {
    let e = r.expect_err("the name breaks a rule");
    assert_eq!(e.kind(), ErrorKind::InvalidName, "{e}");
    for word in rule {
        assert!(e.message().contains(word), "{e:?} should name {word:?}");
    }
}

#[test]
fn empty_name_is_rejected() {
    invalid_name(LockName::new(""), &["empty"]);
    invalid_name(LockName::from_bytes(b""), &["empty"]);
}

#[test]
fn names_up_to_255_bytes_are_accepted_256_rejected() {
    let ok = "n".repeat(255);
    assert_eq!(LockName::new(&ok).map(|n| n.as_str().len()), Ok(255));
    assert_eq!(
        LockName::from_bytes(ok.as_bytes()).map(|n| n.as_str().len()),
        Ok(255)
    );
    let long = "n".repeat(256);
    invalid_name(LockName::new(&long), &["256 bytes", "maximum is 255"]);
    invalid_name(LockName::from_bytes(long.as_bytes()), &["256", "255"]);
    // Bytes, not characters: 127 two-byte characters + 1 byte = 255 bytes is fine.
    let multi = format!("{}x", "é".repeat(127));
    assert_eq!(multi.len(), 255);
    assert!(LockName::new(&multi).is_ok());
    invalid_name(LockName::new(&format!("{multi}x")), &["256 bytes"]);
}

#[test]
fn ten_megabyte_name_is_rejected_with_its_length() {
    let huge = vec![b'x'; 10 << 20];
    invalid_name(
        LockName::from_bytes(&huge),
        &["10485760 bytes", "maximum is 255"],
    );
    let huge = String::from_utf8(huge).expect("ascii");
    invalid_name(LockName::new(&huge), &["10485760 bytes"]);
}

#[test]
fn nul_is_rejected_with_its_position() {
    invalid_name(LockName::new("a\0b"), &["NUL", "byte 1"]);
    invalid_name(LockName::from_bytes(b"\0"), &["NUL", "byte 0"]);
    invalid_name(LockName::new("abc\0"), &["NUL", "byte 3"]);
}

#[test]
fn non_utf8_is_rejected_with_its_position() {
    invalid_name(LockName::from_bytes(&[0xff]), &["UTF-8", "byte 0"]);
    invalid_name(LockName::from_bytes(b"ok\xc3"), &["UTF-8", "byte 2"]);
    // An overlong encoding of '/' is not UTF-8 either.
    invalid_name(LockName::from_bytes(b"a\xc0\xaf"), &["UTF-8", "byte 1"]);
}

#[test]
fn other_characters_are_allowed() {
    for ok in [
        "digest 42",
        "users/émile",
        "a.b.c",
        " ",
        "\u{1F512}",
        "tab\there",
    ] {
        assert_eq!(LockName::new(ok).map(|n| n.to_string()), Ok(ok.to_string()));
    }
}
