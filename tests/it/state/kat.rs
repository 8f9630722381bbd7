//! Known-answer tests through the primitive layer the codecs use
//! (`elicitkit::state::primitive`), so a wrong backend wiring fails here.

use elicitkit::state::primitive::{AEAD_TAG_LEN, AeadAlg, AeadKey, HmacSha256};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("test vector hex"))
        .collect()
}

fn key32(s: &str) -> [u8; 32] {
    hex(s).try_into().expect("32-byte key")
}

#[test]
fn hmac_sha256_rfc4231_cases_1_and_2() {
    let t1 = HmacSha256::new(&[0x0b; 20]).tag(&[b"Hi There"]);
    assert_eq!(
        t1.to_vec(),
        hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    );
    // Split input must give the same tag as the whole.
    let t2 = HmacSha256::new(b"Jefe").tag(&[b"what do ya want ", b"for nothing?"]);
    assert_eq!(
        t2.to_vec(),
        hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    );
}

fn check_aead(alg: AeadAlg, key: &str, nonce: &str, aad: &str, pt: &[u8], ct_tag: &str) {
    let k = AeadKey::new(alg, &key32(key));
    let nonce = hex(nonce);
    let aad = hex(aad);
    let expect = hex(ct_tag);
    let mut buf = pt.to_vec();
    let tag = k.seal_in_place(&nonce, &aad, &mut buf).unwrap();
    buf.extend_from_slice(&tag);
    assert_eq!(buf, expect, "{alg:?} seal");
    let (ct, tag) = expect.split_at(expect.len() - AEAD_TAG_LEN);
    let mut back = ct.to_vec();
    k.open_in_place(&nonce, &aad, &mut back, tag).unwrap();
    assert_eq!(back, pt, "{alg:?} open");
    let mut bad = tag.to_vec();
    bad[0] ^= 1;
    let mut back = ct.to_vec();
    assert!(k.open_in_place(&nonce, &aad, &mut back, &bad).is_err());
}

#[test]
fn chacha20_poly1305_rfc8439_section_2_8_2() {
    check_aead(
        AeadAlg::ChaCha20Poly1305,
        "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
        "070000004041424344454647",
        "50515253c0c1c2c3c4c5c6c7",
        b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.",
        "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6
         3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36
         92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc
         3ff4def08e4b7a9de576d26586cec64b6116
         1ae10b594f09e26a7e902ecbd0600691",
    );
}

#[test]
fn aes_256_gcm_mcgrew_viega_test_case_16() {
    check_aead(
        AeadAlg::Aes256Gcm,
        "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
        "cafebabefacedbaddecaf888",
        "feedfacedeadbeeffeedfacedeadbeefabaddad2",
        &hex(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72
              1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
        ),
        "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa
         8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662
         76fc6ece0f4e1768cddf8853bb2d551b",
    );
}

#[test]
fn aes_256_gcm_siv_rfc8452_appendix_c2() {
    let key = "0100000000000000000000000000000000000000000000000000000000000000";
    let nonce = "030000000000000000000000";
    check_aead(
        AeadAlg::Aes256GcmSiv,
        key,
        nonce,
        "",
        b"",
        "07f5f4169bbf55a8400cd47ea6fd400f",
    );
    check_aead(
        AeadAlg::Aes256GcmSiv,
        key,
        nonce,
        "",
        &hex("0100000000000000"),
        "c2ef328e5c71c83b843122130f7364b761e0b97427e3df28",
    );
}

#[test]
fn wrong_nonce_length_is_refused_not_a_panic() {
    let k = AeadKey::new(AeadAlg::XChaCha20Poly1305, &[1; 32]);
    let mut buf = vec![0u8; 4];
    assert!(k.seal_in_place(&[0; 12], b"", &mut buf).is_err());
    let tag = k.seal_in_place(&[0; 24], b"", &mut buf).unwrap();
    assert!(k.open_in_place(&[0; 24], b"", &mut buf, &tag[..8]).is_err());
}

#[test]
fn xchacha20_poly1305_draft_irtf_cfrg_xchacha_a3_1() {
    // Our XChaCha is HChaCha20 + ChaCha20-Poly1305 from another backend:
    // the published vector pins the composition.
    check_aead(
        AeadAlg::XChaCha20Poly1305,
        "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
        "404142434445464748494a4b4c4d4e4f5051525354555657",
        "50515253c0c1c2c3c4c5c6c7",
        b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.",
        "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb
         731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452
         2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9
         21f9664c97637da9768812f615c68b13b52e
         c0875924c1c7987947deafd8780acf49",
    );
}

#[test]
fn xchacha20_poly1305_agrees_with_rustcrypto_on_many_inputs() {
    use chacha20poly1305::aead::{AeadInPlace, KeyInit};
    for len in [0usize, 1, 15, 16, 17, 63, 64, 65, 300] {
        let key = [len as u8 ^ 0x33; 32];
        let nonce: Vec<u8> = (0..24).map(|i| (i * 7 + len) as u8).collect();
        let pt: Vec<u8> = (0..len).map(|i| (i * 13) as u8).collect();
        let ours = AeadKey::new(AeadAlg::XChaCha20Poly1305, &key);
        let mut a = pt.clone();
        let ta = ours.seal_in_place(&nonce, b"hdr", &mut a).unwrap();
        let theirs = chacha20poly1305::XChaCha20Poly1305::new((&key).into());
        let mut b = pt.clone();
        let tb = theirs
            .encrypt_in_place_detached(nonce.as_slice().into(), b"hdr", &mut b)
            .unwrap();
        assert_eq!(a, b, "ciphertext len {len}");
        assert_eq!(&ta[..], &tb[..], "tag len {len}");
    }
}
