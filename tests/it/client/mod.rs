mod flaws;
mod h1;
mod legacy;
mod modern;
