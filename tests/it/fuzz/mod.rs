mod blackbox;
mod corpus_replay;
mod harness;
mod harness_rmcp;
