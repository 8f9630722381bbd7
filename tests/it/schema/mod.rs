mod fixtures;
mod generate;
