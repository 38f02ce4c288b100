//! What a publisher signs, and the check of its signature: postings and document copies travel
//! through other members (a cell's or a range's former owner hands them on), who must not be
//! able to change or invent them. Each record lists its fields into [`SignedBytes`] —
//! length-prefixed, under a tag naming the record and its version, so that no two records or
//! field splits give the same bytes — and keeps its publisher's public key and signature.

/// A public key or a signature on the wire, at most (ed25519: 36 and 64 bytes).
pub(crate) const MAX_KEY_BYTES: usize = 1024;

/// The bytes a record's publisher signs, built field by field.
pub(crate) struct SignedBytes(Vec<u8>);

impl SignedBytes {
    /// Starts the bytes of a record called `tag` (e.g. `weft-posting/1`).
    pub(crate) fn new(tag: &str, capacity: usize) -> SignedBytes {
        let mut s = SignedBytes(Vec::with_capacity(capacity + 64));
        s.field(tag.as_bytes());
        s
    }

    pub(crate) fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.0.extend_from_slice(bytes);
        self
    }

    pub(crate) fn optional(&mut self, value: Option<&str>) -> &mut Self {
        match value {
            Some(v) => {
                self.0.push(1);
                self.field(v.as_bytes())
            }
            None => {
                self.0.push(0);
                self
            }
        }
    }

    /// A page's address and what it says of itself.
    pub(crate) fn page(&mut self, page: &weft_page::PageMeta) -> &mut Self {
        self.field(page.url.as_bytes()).field(page.title.as_bytes());
        for v in [&page.canonical, &page.author, &page.published, &page.modified] {
            self.optional(v.as_deref());
        }
        self
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// Signs `bytes` as `key`'s: the publisher's encoded public key and the signature.
pub(crate) fn sign(key: &libp2p::identity::Keypair, bytes: &[u8]) -> (Vec<u8>, Vec<u8>) {
    (key.public().encode_protobuf(), key.sign(bytes).unwrap_or_default())
}

/// The peer that `publisher` names (its signature unchecked).
pub(crate) fn publisher_id(publisher: &[u8]) -> Option<libp2p::PeerId> {
    libp2p::identity::PublicKey::try_decode_protobuf(publisher).ok().map(|k| k.to_peer_id())
}

/// Why a signature was not believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadSignature {
    /// The key or the signature is over [`MAX_KEY_BYTES`].
    TooLarge,
    /// Not a key, or not that key's signature over these bytes.
    Invalid,
}

/// The publisher, when `signature` is `publisher`'s over `bytes`.
pub(crate) fn verify(publisher: &[u8], signature: &[u8], bytes: &[u8]) -> Result<libp2p::PeerId, BadSignature> {
    if publisher.len() > MAX_KEY_BYTES || signature.len() > MAX_KEY_BYTES {
        return Err(BadSignature::TooLarge);
    }
    let key = libp2p::identity::PublicKey::try_decode_protobuf(publisher).map_err(|_| BadSignature::Invalid)?;
    if !key.verify(bytes, signature) {
        return Err(BadSignature::Invalid);
    }
    Ok(key.to_peer_id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_split_elsewhere_gives_other_bytes_and_a_signature_holds_only_for_its_bytes() {
        let mut a = SignedBytes::new("t/1", 0);
        a.field(b"ab").field(b"c").optional(None);
        let mut b = SignedBytes::new("t/1", 0);
        b.field(b"a").field(b"bc").optional(None);
        let (a, b) = (a.into_bytes(), b.into_bytes());
        assert_ne!(a, b);
        let key = libp2p::identity::Keypair::generate_ed25519();
        let (publisher, signature) = sign(&key, &a);
        assert_eq!(verify(&publisher, &signature, &a), Ok(key.public().to_peer_id()));
        assert_eq!(publisher_id(&publisher), Some(key.public().to_peer_id()));
        assert_eq!(verify(&publisher, &signature, &b), Err(BadSignature::Invalid));
        assert_eq!(verify(&[1, 2], &signature, &a), Err(BadSignature::Invalid));
        assert_eq!(verify(&publisher, &[0; 2000], &a), Err(BadSignature::TooLarge));
    }
}
