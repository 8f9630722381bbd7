mod kat;
mod tokens;
