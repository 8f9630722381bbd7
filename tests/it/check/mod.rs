mod bounds;
mod cli;
mod cross_instance;
mod matrix;
