mod cli;
mod kat;
mod tokens;
