//! Weft's local index: chunking, ONNX embedding, USearch vectors, the sled document store and
//! SimHash near-duplicate detection. Built by the index milestone; nothing lives here yet.
