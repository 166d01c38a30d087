"""Knowledge: embeddings, the vector store, and (later) lexical search, chunking and hybrid search."""
