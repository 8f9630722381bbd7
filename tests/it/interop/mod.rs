mod checks;
mod loads;
mod stdio;
