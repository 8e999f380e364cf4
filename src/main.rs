fn main() {
    println!("locksmith");
}
